import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// One record id, a `String`, from create to edit: the `recordId` `createRecord` gives goes straight into edit,
/// get, duplicate, delete and upload, callback and async; text that is not a record id is refused unsent (-1002).
@Suite("Record ids from create to edit")
struct RecordIdTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture)) }

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
}
