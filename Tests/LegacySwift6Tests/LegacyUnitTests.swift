import Foundation
import Testing
@testable import SwiftFM

// Pure parts of the legacy layer that the emulator can't provoke.

@Suite struct LegacyUnitTests {
    @Test func databasePathParsing() throws {
        let path = try #require(LegacyEnvironment.parseDatabasePath("https://my.server.com/fmi/data/v1/databases/Music"))
        #expect(path.server.absoluteString == "https://my.server.com")
        #expect(path.version == .v1)
        #expect(path.database == "Music")
        let local = try #require(LegacyEnvironment.parseDatabasePath("http://127.0.0.1:8080/fmi/data/vLatest/databases/My%20DB/"))
        #expect(local.server.absoluteString == "http://127.0.0.1:8080")
        #expect(local.version == .vLatest)
        #expect(local.database == "My DB")
        let bare = try #require(LegacyEnvironment.parseDatabasePath("my.server.com/fmi/data/v2/databases/Music"))
        #expect(bare.server.absoluteString == "https://my.server.com")
        #expect(LegacyEnvironment.parseDatabasePath("https://my.server.com/somewhere") == nil)
        let proxied = try #require(LegacyEnvironment.parseDatabasePath("https://proxy.example.com/fm/fmi/data/v1/databases/Music"))
        #expect(proxied.server.absoluteString == "https://proxy.example.com/fm")
    }

    @Test func hostParsing() {
        #expect(LegacyEnvironment.parseHost("my.server.com")?.absoluteString == "https://my.server.com")
        #expect(LegacyEnvironment.parseHost("my.server.com:8443")?.absoluteString == "https://my.server.com:8443")
        #expect(LegacyEnvironment.parseHost("http://127.0.0.1:8080/")?.absoluteString == "http://127.0.0.1:8080")
        #expect(LegacyEnvironment.parseHost("proxy.example.com/fm/")?.absoluteString == "https://proxy.example.com/fm")
        #expect(LegacyEnvironment.parseHost("") == nil)
        #expect(LegacyEnvironment.parseHost("ftp://x") == nil)
    }

    @Test func emptyGetRecordIsAnErrorNotACrash() {
        let (record, code, _) = DataAPI.firstRecord([], "0", "OK")
        #expect(record == nil)
        #expect(code == FMError.ClientCode.emptyResult)
        let (first, okCode, _) = DataAPI.firstRecord([["recordId": "1"]], "0", "OK")
        #expect(first?["recordId"] as? String == "1")
        #expect(okCode == "0")
    }

    @Test func envelopeDecoding() throws {
        let body = Data(#"{"response":{"recordId":"7","modId":"0"},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
        let json = try LegacyCall.decodeEnvelope(.init(status: 200, headers: [:], body: body))
        #expect(json.code == "0")
        #expect(json.response["recordId"] as? String == "7")
        #expect(throws: FMError.self) { try LegacyCall.decodeEnvelope(.init(status: 200, headers: [:], body: Data("<html>".utf8))) }
    }

    @Test func modIdIsSentAsAString() throws {
        let endpoint = LegacyCall.edit(layout: "L", recordId: 3, payload: ["fieldData": ["a": 1]], modId: 12).endpoint(token: "t")
        guard case .json(let data) = endpoint.body,
              let body = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { Issue.record("no JSON body"); return }
        #expect(body["modId"] as? String == "12")
        #expect(endpoint.segments == ["layouts", "L", "records", "3"])
        guard case .token(let token) = endpoint.auth else { Issue.record("not the caller's token"); return }
        #expect(token == "t")
    }
}
