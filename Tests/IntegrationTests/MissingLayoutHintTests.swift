// Contract: FileMaker's 105 ("Layout is missing") names no layout; the client's message keeps FileMaker's words and
// adds which layout of which database was asked for, and where to look (`layouts()`), on every surface that carries the
// error: the async API's FMError and FMError.current in a completion (the legacy surface:
// LegacyMissingLayoutHintTests). The code (105) and the HTTP
// status stay FileMaker's; names are shown safely (a control character as U+FFFD). A 105 from an endpoint that names
// no layout keeps FileMaker's words alone. A call that also names a response layout (`layout.response`) may be
// missing either one: the message never blames the layout that exists alone, and names the response layout too.
// A hostile name (bidi controls, a line break, quotes, thousands of characters) is shown on one line, bounded.
import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

@Suite("A missing layout is named")
struct MissingLayoutHintTests {
    static let hint = #"Layout is missing; no layout "Bandz" in database Integration: check the layout's name (layouts() lists the ones this account can use)"#

    @Test func theAsyncErrorNamesTheLayoutAndTheDatabase() async throws {
        try await withClient { api, _ in
            do {
                _ = try await api.getRecords(layout: "Bandz", limit: 1)
                Issue.record("expected 105")
            } catch let error as FMError {
                #expect(error.code == "105")
                #expect(error.httpStatus == 500)
                #expect(error.message == Self.hint, "\(error.message)")
            }
        }
    }

    @Test func aCompletionSeesTheSameMessage() async throws {
        try await withClient { api, _ in
            let (code, message) = await withCheckedContinuation { (done: CheckedContinuation<(String, String?), Never>) in
                api.getRecord(layout: "Bandz", recordId: 1) { _, code in done.resume(returning: (code, FMError.current?.message)) }
            }
            #expect(code == "105")
            #expect(message == Self.hint)
        }
    }

    @Test func aNameWithAControlCharacterIsShownSafely() async throws {
        _ = try await withClient { api, _ in
            await #expect(throws: FMError(code: "105", message: "Layout is missing; no layout \"Band\u{FFFD}z\" in database Integration: "
                                          + "check the layout's name (layouts() lists the ones this account can use)", httpStatus: 500)) {
                _ = try await api.getRecords(layout: "Band\u{7}z", limit: 1)
            }
        }
    }

    @Test func aMissingResponseLayoutIsNotBlamedOnTheLayoutAlone() async throws {
        try await withClient { api, _ in
            do {
                _ = try await api.getRecords(layout: "Bands", limit: 1, options: FMReadOptions(layoutResponse: "Bandz List"))
                Issue.record("expected 105")
            } catch let error as FMError {
                #expect(error.code == "105")
                #expect(!error.message.contains(#"no layout "Bands" in database"#), "\(error.message)")
                #expect(error.message.contains(#""Bandz List""#), "\(error.message)")
                #expect(error.message.contains("layouts()"), "\(error.message)")
            }
        }
    }

    @Test func aFindWithAMissingResponseLayoutNamesItToo() async throws {
        try await withClient { api, _ in
            let request = FMFindRequest(queries: [FMQuery(["name": "*"])], layoutResponse: "Bandz List")
            do {
                _ = try await api.find(layout: "Bands", request: request)
                Issue.record("expected 105")
            } catch let error as FMError {
                #expect(error.code == "105")
                #expect(error.message.contains(#""Bandz List""#), "\(error.message)")
            }
        }
    }

    @Test func aHostileLayoutNameIsShownOnOneLineAndBounded() async throws {
        try await withClient { api, _ in
            let name = "\u{202E}Bandz\n\"quoted\"\u{2066}" + String(repeating: "x", count: 5_000)
            do {
                _ = try await api.getRecords(layout: name, limit: 1)
                Issue.record("expected an error")
            } catch let error as FMError {
                #expect(!error.message.contains("\n") && !error.message.contains("\u{202E}") && !error.message.contains("\u{2066}"),
                        "\(error.message.prefix(200))")
                #expect(error.message.count < 600, "\(error.message.count)")
                #expect(error.code == "105")
                #expect(error.message.contains("\u{FFFD}Bandz\u{FFFD}"), "\(error.message.prefix(200))")
            }
        }
    }
}
