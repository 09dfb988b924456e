import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Every `(value?, code)` completion of an FMOData call that failed runs with ``FMError/current`` bound to the error
// behind its code (message, HTTP status), as every other callback completion of SwiftFM does: also a count (whose
// first request is sent inline, then handed to the callback queue) and a download into a file (whose answer arrived,
// then the file could not be placed).
@Suite("OData: every callback failure binds FMError.current")
struct EveryODataCallbackFailureBindsTheCurrentErrorTests {
    static let unknownTable = #"{"error":{"code":"-1020","message":"Table 'nope' not found"}}"#

    /// Failed on main: the completion ran with `FMError.current` nil (code -1020, no error to read).
    @Test func aCountThatFailsBindsItsError() {
        let setup = ODataHarness { _ in .json(404, Self.unknownTable) }
        let seen = Locked<FMError?>(nil)
        let (count, code) = setup.run { odata, done in
            odata.count(of: "nope") { count, code in
                seen.withLock { $0 = FMError.current }
                done(count, code)
            }
        }
        #expect(count == nil && code == "-1020")
        #expect(seen.value?.code == "-1020" && seen.value?.httpStatus == 404, "\(String(describing: seen.value))")
        #expect(seen.value?.message.contains("not found") == true)
    }

    /// Held on main (the second request's completion was the engine's): the fallback after a 400 binds its error too.
    @Test func aCountThatFailsAfterItsFallbackBindsItsError() {
        let setup = ODataHarness { request in
            (request.url?.path ?? "").hasSuffix("/$count")
                ? .json(400, #"{"error":{"code":"-1002","message":"syntax error"}}"#) : .json(404, Self.unknownTable)
        }
        let seen = Locked<FMError?>(nil)
        let (_, code) = setup.run { odata, done in
            odata.count(of: "nope") { count, code in
                seen.withLock { $0 = FMError.current }
                done(count, code)
            }
        }
        #expect(code == "-1020" && seen.value?.code == "-1020")
    }

    /// A success binds none.
    @Test func aCountThatSucceedsBindsNone() {
        let setup = ODataHarness { _ in .body(200, Data("42".utf8), contentType: "text/plain") }
        let seen = Locked<String>("unset")
        let (count, code) = setup.run { odata, done in
            odata.count(of: "contacts") { count, code in
                seen.withLock { $0 = FMError.current?.code ?? "none" }
                done(count, code)
            }
        }
        #expect(count == 42 && code == "0" && seen.value == "none")
    }

    /// Failed on main: the download's answer arrived (bound as a success), then the file could not be placed over a
    /// directory: the completion got -1009 with `FMError.current` nil.
    @Test func aDownloadThatCannotBePlacedBindsItsError() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("odata-current-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let setup = ODataHarness { _ in .body(200, Data("GIF89a".utf8), contentType: "image/gif") }
        let seen = Locked<FMError?>(nil)
        let (url, code) = setup.run { odata, done in
            odata.downloadContainer(from: "contacts", key: 1, field: "photo", to: directory) { url, code in
                seen.withLock { $0 = FMError.current }
                done(url, code)
            }
        }
        #expect(url == nil && code == FMError.ClientCode.fileError)
        #expect(seen.value?.code == FMError.ClientCode.fileError, "\(String(describing: seen.value))")
    }
}
