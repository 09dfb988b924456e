import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Issue 18: no success code on an error status, and one record id (a `String`) from create to edit.
@Suite("First contact: error statuses and record ids")
struct FirstContactTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture)) }

    // MARK: no success code on an error

    static let successBodies = [
        #"{"messages":[{"code":"0","message":"OK"}],"response":{}}"#,
        #"{"messages":[{"code":"0"}]}"#,
        #"{"messages":[{"code":0,"message":"OK"}],"response":{}}"#,
        #"{"messages":[{"code":"","message":""}],"response":{}}"#,
        #"{"messages":[{"message":"no code"}],"response":{}}"#,
    ]

    /// An error status whose body says `"0"` (or no code) completes with `-1007` and the status, on every
    /// surface: never `(nil, "0")`, never a thrown error whose code is `"0"`.
    @Test(arguments: [404, 500, 400, 403, 409], [0, 1, 2, 3, 4])
    func anErrorStatusNeverCompletesWithCodeZero(status: Int, body: Int) async throws {
        let text = Self.successBodies[body]
        let h = Harness(store: Self.loggedIn) { _ in .json(status, text) }
        let callback = Recorder<(Bool, String, FMError?)>()
        h.api.getRecords(layout: "Contacts") { found, code in callback.record((found == nil, code, FMError.current)) }
        let (noValue, code, current) = try #require(await callback.value().first)
        #expect(noValue && code == FMError.ClientCode.malformedResponse, "HTTP \(status) \(text): \(code)")
        #expect(current?.code == FMError.ClientCode.malformedResponse && current?.httpStatus == status)
        do {
            _ = try await h.api.getRecords(layout: "Contacts")
            Issue.record("HTTP \(status) returned a value")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.malformedResponse && error.httpStatus == status)
            #expect(body == 4 || error.message.contains("HTTP \(status)"), "the message says what came")
        }
    }

    // MARK: one record id from create to edit

    static func idStub(_ seen: Locked<[String]>) -> StubTransport.Handler {
        { request in
            seen.withLock { $0.append("\(request.httpMethod ?? "?") \(request.url?.path ?? "")") }
            switch request.httpMethod {
            case "POST" where (request.url?.path ?? "").contains("/containers/"):
                return .json(200, #"{"response":{"modId":"2"},"messages":[{"code":"0","message":"OK"}]}"#)
            case "POST":
                return .json(200, #"{"response":{"recordId":"42","modId":"0"},"messages":[{"code":"0","message":"OK"}]}"#)
            case "PATCH":
                return .json(200, #"{"response":{"modId":"1"},"messages":[{"code":"0","message":"OK"}]}"#)
            case "DELETE":
                return .json(200, #"{"response":{},"messages":[{"code":"0","message":"OK"}]}"#)
            default:
                return .json(200, #"{"response":{"data":[{"fieldData":{},"portalData":{},"recordId":"42","modId":"1"}],"dataInfo":{"foundCount":1,"returnedCount":1,"totalRecordCount":1}},"messages":[{"code":"0","message":"OK"}]}"#)
            }
        }
    }

    /// `createRecord`'s `recordId` (a `String`) goes straight into edit, get, delete and upload, callback
    /// and async; integer literals still pick the `Int` overloads.
    @Test func theIdCreateGaveEditsGetsAndDeletes() async throws {
        let seen = Locked<[String]>([])
        let h = Harness(store: Self.loggedIn, Self.idStub(seen))
        let created = Recorder<FMRecordReference?>()
        h.api.createRecord(layout: "Artists", fieldData: ["name": "Nina"]) { ref, _ in created.record(ref) }
        let ref = try #require(await created.value().first ?? nil)
        let edited = Recorder<String>()
        h.api.editRecord(layout: "Artists", recordId: ref.recordId, fieldData: ["city": "Paris"], modId: ref.modId) { _, code in edited.record(code) }
        #expect(await edited.value() == ["0"])
        let read = Recorder<String>()
        h.api.getRecord(layout: "Artists", recordId: ref.recordId) { _, code in read.record(code) }
        #expect(await read.value() == ["0"])
        let uploaded = Recorder<String>()
        h.api.uploadContainer(layout: "Artists", recordId: ref.recordId, field: "photo", data: Data("x".utf8), fileName: "x.txt") { _, code in
            uploaded.record(code)
        }
        #expect(await uploaded.value() == ["0"])

        let asyncRef = try await h.api.createRecord(layout: "Artists", fieldData: ["name": "Ana"])
        _ = try await h.api.editRecord(layout: "Artists", recordId: asyncRef.recordId, fieldData: ["city": "Lyon"])
        _ = try await h.api.getRecord(layout: "Artists", recordId: asyncRef.recordId)
        _ = try await h.api.duplicateRecord(layout: "Artists", recordId: asyncRef.recordId)
        _ = try await h.api.deleteRecord(layout: "Artists", recordId: asyncRef.recordId)
        _ = try await h.api.editRecord(layout: "Artists", recordId: 7, fieldData: ["city": "Nice"])  // a literal: the Int overload

        let paths = seen.withLock { $0 }
        #expect(paths.filter { $0.hasSuffix("/records/42") }.count == 6)
        #expect(paths.contains { $0.hasSuffix("/records/42/containers/photo/1") })
        #expect(paths.contains { $0 == "PATCH /fmi/data/vLatest/databases/Contacts/layouts/Artists/records/7" })
    }

    /// Text that is not a record id completes with `-1002` and sends nothing.
    @Test(arguments: ["", "abc", "-1", "+1", "0", " 42", "4 2", "1e3", "99999999999999999999999", "٤٢"])
    func textThatIsNotARecordIdIsRefusedUnsent(recordId: String) async {
        let seen = Locked<[String]>([])
        let h = Harness(store: Self.loggedIn, Self.idStub(seen))
        let callback = Recorder<(String, FMError?)>()
        h.api.editRecord(layout: "Artists", recordId: recordId, fieldData: ["a": "b"]) { _, code in callback.record((code, FMError.current)) }
        let result = await callback.value().first
        #expect(result?.0 == FMError.ClientCode.invalidArgument && result?.1?.code == FMError.ClientCode.invalidArgument)
        await #expect(throws: FMError.self) { try await h.api.getRecord(layout: "Artists", recordId: recordId) }
        #expect(seen.withLock { $0 }.isEmpty)
    }

    // MARK: frictions

    /// The 302 that starts every container download is part of the download: logged at debug, never as a
    /// warning with a code (it was "302 code -1006" at warning).
    @Test func aContainerRedirectIsLoggedAtDebug() async throws {
        let h = Harness(EndpointsSurfaceTests.redirectingStub())
        let done = Recorder<String>()
        h.api.downloadContainer(url: EndpointsSurfaceTests.containerURL) { _, code in done.record(code) }
        #expect(await done.value() == ["0"])
        let events = h.logs.values
        #expect(events.contains { $0.level == .debug && $0.message.hasPrefix("← GET") && $0.message.contains(" 302 ") })
        #expect(!events.contains { $0.level >= .warning }, "\(events.filter { $0.level >= .warning }.map(\.message))")
    }

    // MARK: a missing scheme

    static func urlError(_ code: Int, _ text: String) -> NSError {
        NSError(domain: NSURLErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: text])
    }

    /// What libcurl says when plain HTTP answers a ClientHello ("wrong version number"), when the server
    /// closes (`SSL_ERROR_SYSCALL`), and Apple's `secureConnectionFailed`: -1003 naming `http://host:port`,
    /// and never retried. A certificate problem is not a scheme problem.
    @Test func aFailedHandshakeNamesTheSchemeAndIsNotRetried() throws {
        let url = URL(string: "https://127.0.0.1:3000/fmi/data/vLatest/productInfo")
        for failure in [Self.urlError(-1, "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"),
                        Self.urlError(-1, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to 127.0.0.1:3000"),
                        Self.urlError(-1200, "An SSL error has occurred")] {
            let error = FMError.fromTransport(failure, url: url)
            #expect(error.code == FMError.ClientCode.transport && error.isWrongScheme)
            #expect(error.message.contains("http://127.0.0.1:3000"), "\(error)")
            #expect(Classifier.verdict(for: error, beforeAnswer: true, usedSession: false, headers: [:]) == .final)
        }
        let certificate = FMError.fromTransport(Self.urlError(-1202, "The certificate for this server is invalid"), url: url)
        #expect(!certificate.isWrongScheme)
        #expect(!FMError.fromTransport(Self.urlError(-1, "SSL routines::wrong version number"),
                                       url: URL(string: "http://127.0.0.1:3000/x")).isWrongScheme)
    }

    /// nginx answers plain HTTP on its HTTPS port with a 400 page: the call says to write `https://`.
    @Test func plainHTTPToATLSPortNamesHTTPS() async throws {
        let page = "<html><head><title>400 The plain HTTP request was sent to HTTPS port</title></head></html>"
        var configuration = FMConfiguration(host: "http://fms.example.com:8443", database: "Contacts", username: "admin", password: "pw")
        configuration.retry = .standard
        let h = Harness(configuration: configuration) { _ in .body(400, Data(page.utf8), contentType: "text/html") }
        let recorder = Recorder<(String, FMError?)>()
        h.api.getRecords(layout: "Contacts") { _, code in recorder.record((code, FMError.current)) }
        let (code, error) = try #require(await recorder.value().first)
        #expect(code == FMError.ClientCode.transport)
        #expect(error?.message.contains("https://fms.example.com:8443") == true, "\(String(describing: error))")
        #expect(h.stub.requests.count == 1, "not retried")
    }

    /// SwiftFM's client codes print as `FMError -1004`, an underlying URLError as `URLError(-1004 name)`:
    /// never two bare `-1004`s of different meaning in one line.
    @Test func anUnderlyingURLErrorPrintsWithItsName() {
        let error = FMError.fromTransport(URLError(.cannotConnectToHost))
        let text = String(describing: error)
        #expect(text.hasPrefix("FMError -1003: "))
        #expect(text.contains("URLError(-1004 cannotConnectToHost)"), "\(text)")
        #expect(FMError.fromTransport(URLError(.timedOut)).code == FMError.ClientCode.timeout)
        let timedOut = FMError.fromTransport(URLError(.timedOut), url: URL(string: "https://fms.example.com/fmi/data/vLatest/databases/Music"))
        #expect(timedOut.message == "The request to fms.example.com:443 timed out", "\(timedOut.message)")
    }

    /// A raw record's field in one call, typed by the caller; the records stay `[[String: Any]]`.
    @Test func aRawRecordFieldReadsInOneCall() throws {
        let body = #"{"response":{"data":[{"fieldData":{"name":"Nina","rating":5,"born":""},"portalData":{"albums":[{"recordId":"3","albums::title":"One"}]},"recordId":"1","modId":"2"}]},"messages":[{"code":"0","message":"OK"}]}"#
        let found = try FMFoundSet(responseBody: Data(body.utf8))
        let record = try #require(found.records.first)
        #expect(record.field("name", as: String.self) == "Nina")
        #expect(record.field("rating", as: Int.self) == 5)
        #expect(record.field("rating", as: String.self) == nil)
        #expect(record.field("missing", as: String.self) == nil)
        let row = try #require((record["portalData"] as? [String: Any])?["albums"] as? [[String: Any]]).first
        #expect(row?.field("albums::title", as: String.self) == "One")
    }

    /// `getRecords` past the end (or on an empty table) completes like a find with no match: code 401 and
    /// an empty found set, not `nil`; the async forms return the empty set.
    @Test func getRecordsPastTheEndIsAnEmptyFoundSet() async throws {
        let h = Harness(store: Self.loggedIn) { _ in .json(500, Bodies.noRecords) }
        let raw = Recorder<(Int?, String)>()
        h.api.getRecords(layout: "Contacts", offset: 1000) { found, code in raw.record((found?.records.count, code)) }
        #expect(await raw.value().first.map { $0.0 == 0 && $0.1 == "401" } == true)
        struct Row: Decodable { var name: String }
        let typed = Recorder<(Int?, String)>()
        h.api.getRecords(as: Row.self, layout: "Contacts", offset: 1000) { found, code in typed.record((found?.records.count, code)) }
        #expect(await typed.value().first.map { $0.0 == 0 && $0.1 == "401" } == true)
        #expect(try await h.api.getRecords(layout: "Contacts", offset: 1000).records.isEmpty)
        #expect(try await h.api.getRecords(as: Row.self, layout: "Contacts", offset: 1000).records.isEmpty)
    }

    static let recordIsMissing = #"{"messages":[{"code":"101","message":"Record is missing"}],"response":{}}"#

    /// A range read answered 101 "Record is missing" (real servers, for an empty layout) is an empty page
    /// to `pages` and `forEachPage`, never an error; a find's 101 stays an error.
    @Test func aRangeReadAnswered101IsAnEmptyPage() async throws {
        let h = Harness(store: Self.loggedIn) { _ in .json(500, Self.recordIsMissing) }
        var pages = 0
        for try await _ in h.api.pages(layout: "Empty") { pages += 1 }
        #expect(pages == 0)
        let walked = Recorder<(Int?, String)>()
        h.api.forEachPage(layout: "Empty", page: { _ in true }, completion: { count, code in walked.record((count, code)) })
        #expect(await walked.value().first.map { $0.0 == 0 && $0.1 == "0" } == true)
        let found = Recorder<String>()
        h.api.forEachPage(layout: "Empty", find: FMFindRequest(queries: [FMQuery(["a": "b"])]), page: { _ in true },
                          completion: { _, code in found.record(code) })
        #expect(await found.value() == ["101"])
    }
}
