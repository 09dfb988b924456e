import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The public callback and async surfaces of stream api, over the engine with a stub transport.
@Suite struct EndpointsSurfaceTests {
    /// A stub handler that answers logins and delegates the rest.
    static func withLogin(_ rest: @escaping @Sendable (URLRequest) -> StubAnswer?) -> StubTransport.Handler {
        { request in isLogin(request) ? .json(200, Bodies.login()) : rest(request) }
    }

    @Test func getRecordsCallbackSendsEncodedRequestAndDeliversPair() throws {
        let harness = Harness(Self.withLogin { request in
            #expect(request.httpMethod == "GET")
            return .json(200, Canned.foundSet)
        })
        let recorder = Recorder<(Int?, String)>(queueKey: Harness.key)
        harness.api.getRecords(layout: "My Layout/Odd", offset: 1, limit: 2, sort: [.descending("name")]) { set, code in
            recorder.record((set?.count, code))
        }
        let values = recorder.wait()
        #expect(values.first?.0 == 2 && values.first?.1 == "0")
        #expect(recorder.offQueue == 0)
        let url = try #require(harness.stub.requests.last?.url?.absoluteString)
        #expect(url.contains("/layouts/My%20Layout%2FOdd/records?_offset=1&_limit=2&_sort="))
        #expect(harness.stub.requests.last?.header("Authorization") == "Bearer \(Bodies.token)")
    }

    @Test func findNoMatchIsAnEmptyFoundSetWithCode401() async throws {
        let harness = Harness(Self.withLogin { _ in .json(500, Bodies.noRecords) })
        let recorder = Recorder<(FMFoundSet?, String)>()
        harness.api.find(layout: "Contacts", request: FMFindRequest(["name": "==Nobody"])) { set, code in recorder.record((set, code)) }
        let value = try #require(await recorder.value().first)
        #expect(value.0 != nil && value.0?.isEmpty == true && value.1 == "401")

        let raw = Recorder<(FMFoundSet?, String)>()
        harness.api.find(layout: "Contacts", payload: ["query": [["name": "x"]]]) { set, code in raw.record((set, code)) }
        #expect(await raw.value().first.map { $0.0?.isEmpty == true && $0.1 == "401" } == true)

        let typed = Recorder<(Int?, String)>()
        harness.api.find(as: Person.self, layout: "Contacts", request: FMFindRequest(["name": "x"])) { set, code in typed.record((set?.records.count, code)) }
        #expect(await typed.value().first.map { $0.0 == 0 && $0.1 == "401" } == true)

        let asyncSet = try await harness.api.find(layout: "Contacts", request: FMFindRequest(["name": "x"]))
        #expect(asyncSet.isEmpty)
        let asyncTyped = try await harness.api.find(as: Person.self, layout: "Contacts", request: FMFindRequest(["name": "x"]))
        #expect(asyncTyped.records.isEmpty)
    }

    @Test func otherFindErrorsStayErrors() async {
        let harness = Harness(Self.withLogin { _ in .json(500, #"{"messages":[{"code":"102","message":"Field is missing"}],"response":{}}"#) })
        let recorder = Recorder<(FMFoundSet?, String)>()
        harness.api.find(layout: "Contacts", request: FMFindRequest(["nope": "x"])) { set, code in recorder.record((set, code)) }
        #expect(await recorder.value().first.map { $0.0 == nil && $0.1 == "102" } == true)
        await #expect(throws: FMError.self) { try await harness.api.find(layout: "Contacts", request: FMFindRequest(["nope": "x"])) }
    }

    @Test func unencodablePayloadCompletesWithoutSending() async {
        let harness = Harness()
        let recorder = Recorder<(FMRecordReference?, String)>(queueKey: Harness.key)
        harness.api.createRecord(layout: "Contacts", fieldData: ["n": Double.nan]) { ref, code in recorder.record((ref, code)) }
        #expect(await recorder.value().first.map { $0.0 == nil && $0.1 == "-1002" } == true)
        #expect(recorder.offQueue == 0)
        let globals = Recorder<(Bool, String)>()
        harness.api.setGlobals(["T::g": NSNull()]) { ok, code in globals.record((ok, code)) }
        #expect(await globals.value().first.map { !$0.0 && $0.1 == "-1002" } == true)
        do {
            try await harness.api.editRecord(layout: "L", recordId: 1, fieldData: ["a": Date()])
            Issue.record("expected a throw")
        } catch let error as FMError {
            #expect(error.code == "-1002")
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(harness.stub.requests.isEmpty)
    }

    @Test func asyncOneLinersDecode() async throws {
        let harness = Harness(Self.withLogin { request in
            let path = request.url?.path ?? ""
            if path.hasSuffix("/productInfo") { return .json(200, Canned.productInfo) }
            if path.hasSuffix("/script/Echo") { return .json(200, #"{"response":{"scriptResult":"abc","scriptError":"0"},\#(Canned.ok)}"#) }
            if path.hasSuffix("/records/1"), request.httpMethod == "PATCH" { return .json(200, #"{"response":{"modId":"2"},\#(Canned.ok)}"#) }
            if path.hasSuffix("/records") { return .json(200, Canned.foundSet) }
            return nil
        })
        #expect(try await harness.api.productInfo().name == "FileMaker Data API Engine")
        #expect(try await harness.api.runScript(layout: "L", script: "Echo", parameter: "abc") == FMScriptResult(result: "abc", error: "0"))
        #expect(try await harness.api.editRecord(layout: "L", recordId: 1, fieldData: ["a": "b"], modId: "1").modId == "2")
        let typed = try await harness.api.getRecords(as: Person.self, layout: "L")
        #expect(typed.records.map(\.fieldData.name) == ["Masayuki", "Ann"])
        let patch = try #require(harness.stub.requests.first { $0.httpMethod == "PATCH" })
        #expect(patch.header("Content-Type") == "application/json")
        let body = try #require(patch.httpBody)
        #expect(canonical(try JSONSerialization.jsonObject(with: body)) == #"{"fieldData":{"a":"b"},"modId":"1"}"#)
    }

    @Test func containerUploadSendsMultipart() async throws {
        let harness = Harness(Self.withLogin { _ in .json(200, #"{"response":{"modId":"5"},\#(Canned.ok)}"#) })
        let result = try await harness.api.uploadContainer(layout: "L", recordId: 3, field: "photo", data: EndpointsContainerTests.png, fileName: "p")
        #expect(result.modId == "5")
        let request = try #require(harness.stub.requests.last)
        #expect(request.url?.path.hasSuffix("/layouts/L/records/3/containers/photo/1") == true)
        #expect(request.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=SwiftFM-") == true)
        #expect(String(decoding: request.httpBody ?? Data(), as: UTF8.self).contains("Content-Type: image/png"))
    }

    static let containerURL = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor")!

    static func redirectingStub() -> StubTransport.Handler {
        { request in
            guard let url = request.url?.absoluteString else { return nil }
            if url.contains("Redirect=1") { return .body(200, Data([7, 8, 9]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": "/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor&Redirect=1",
                                             "Set-Cookie": "X-FMS-Session-Key=k1; HttpOnly; Path=/"])
        }
    }

    @Test func containerDownloadFollowsTheRedirect() async throws {
        let harness = Harness(Self.redirectingStub())
        let recorder = Recorder<(Data?, String)>(queueKey: Harness.key)
        harness.api.downloadContainer(url: Self.containerURL) { data, code in recorder.record((data, code)) }
        let value = try #require(await recorder.value().first)
        #expect(value.0 == Data([7, 8, 9]) && value.1 == "0")
        #expect(recorder.offQueue == 0)
        let requests = harness.stub.requests
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.header("Authorization") == nil })
        #expect(requests.last?.url?.absoluteString == "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor&Redirect=1")
        #expect(requests.last?.header("Cookie") == "X-FMS-Session-Key=k1", "the session cookie goes back with the redirected request")

        let asyncData = try await harness.api.downloadContainer(url: Self.containerURL)
        #expect(asyncData == Data([7, 8, 9]))
    }

    @Test func containerDownloadToFile() async throws {
        let harness = Harness(Self.redirectingStub())
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-dl-\(UUID().uuidString).png")
        defer { try? FileManager.default.removeItem(at: target) }
        let recorder = Recorder<(URL?, String)>()
        harness.api.downloadContainer(url: Self.containerURL, to: target) { url, code in recorder.record((url, code)) }
        #expect(await recorder.value().first.map { $0.0 == target && $0.1 == "0" } == true)
        #expect(try Data(contentsOf: target) == Data([7, 8, 9]))

        let bad = URL(fileURLWithPath: "/nonexistent-dir-\(UUID().uuidString)/x.png")
        let failing = Recorder<(URL?, String)>()
        harness.api.downloadContainer(url: Self.containerURL, to: bad) { url, code in failing.record((url, code)) }
        #expect(await failing.value().first.map { $0.0 == nil && $0.1 == "-1009" } == true)
    }

    /// A loop is an expired streaming URL (-1014, see StaleContainerURLSaysItExpiredTests), found at the first
    /// request sent again unchanged.
    @Test func containerDownloadRedirectLoopStops() {
        let harness = Harness { _ in .json(302, "", headers: ["Location": "https://fms.example.com/loop"]) }
        let recorder = Recorder<(Data?, String)>()
        harness.api.downloadContainer(url: Self.containerURL) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first.map { $0.0 == nil && $0.1 == FMError.ClientCode.containerURLExpired } == true)
        #expect(harness.stub.requests.count == 2)
    }

    @Test func containerDownloadErrorStatus() {
        let harness = Harness { _ in .body(404, Data("<html>nope</html>".utf8), contentType: "text/html") }
        let recorder = Recorder<(Data?, String)>()
        harness.api.downloadContainer(url: Self.containerURL) { data, code in recorder.record((data, code)) }
        #expect(recorder.wait().first.map { $0.0 == nil && $0.1 == "-1006" } == true)
    }
}

@Suite struct EndpointsDatabasesAuthTests {
    @Test func databasesSendsBasicWhenCredentialsAreConfigured() async throws {
        let harness = Harness { _ in .json(200, Canned.databases) }
        #expect(try await harness.api.databases().map(\.name) == ["Contacts", "Sales"])
        #expect(harness.stub.requests.last?.header("Authorization") == "Basic \(basicValue("admin", "s3cret-pass"))")
    }

    @Test func databasesWithoutCredentialsSendsNoAuthorization() async throws {
        let harness = Harness(configuration: FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: nil)) { _ in
            .json(200, Canned.databases)
        }
        #expect(try await harness.api.databases().count == 2)
        #expect(harness.stub.requests.last?.header("Authorization") == nil)
    }
}
