import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// The engine over a real socket: a login and a call on an explicit port, redirects not followed, an HTML 502 is
// -1006, a silent server -1004, and a real request cancelled.

@Suite("Engine over loopback HTTP (real URLSession)")
struct EngineLoopbackTests {
    /// The deadline is the hang bound unless a test's subject is the deadline: each outcome here comes at once, and a
    /// loaded machine could pass a 30 s deadline first (`-1004`).
    func api(_ server: LoopbackServer, timeout: TimeInterval = TestBound.seconds) -> (DataAPI, DispatchQueue) {
        let queue = DispatchQueue(label: "loopback.callbacks")
        queue.setSpecific(key: Harness.key, value: "callbacks")
        let configuration = FMConfiguration(host: "http://127.0.0.1:\(server.port)", database: "My DB", username: "admin", password: "pw", timeout: timeout)
        return (DataAPI(configuration: configuration, callbackQueue: queue), queue)
    }

    @Test func loginAndCallOverHTTPWithAnExplicitPort() throws {
        let server = LoopbackServer { head in
            if head.hasPrefix("POST ") {
                return LoopbackServer.http("200 OK", headers: ["Content-Type": "application/json", "X-FM-Data-Access-Token": "hdr"], body: Bodies.login("tok"))
            }
            return LoopbackServer.http("200 OK", headers: ["Content-Type": "application/json"], body: Bodies.value("hi"))
        }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(TestEndpoints.records("a/b?c#d")) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "hi")
        #expect(recorder.offQueue == 0)
        let heads = server.heads
        #expect(heads.count == 2)
        #expect(heads.first?.hasPrefix("POST /fmi/data/vLatest/databases/My%20DB/sessions HTTP/1.1") == true)
        #expect(heads.first?.contains("Authorization: Basic YWRtaW46cHc=") == true)
        #expect(heads.last?.hasPrefix("GET /fmi/data/vLatest/databases/My%20DB/layouts/a%2Fb%3Fc%23d/records HTTP/1.1") == true)
        #expect(heads.last?.contains("Authorization: Bearer tok") == true)
        // Dot segments are not collapsed on the way (neither by Foundation nor by libcurl).
        let dots = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(TestEndpoints.records("..")) { dots.record($0) }
        #expect(dots.wait().first?.testValue == "hi")
        #expect(server.heads.last?.hasPrefix("GET /fmi/data/vLatest/databases/My%20DB/layouts/%2E%2E/records HTTP/1.1") == true)
    }

    @Test func redirectsAreNotFollowed() {
        let server = LoopbackServer { head in
            head.hasPrefix("GET /container") ? LoopbackServer.http("302 Found", headers: ["Location": "/elsewhere", "Set-Cookie": "X-FMS-Session-Key=abc; HttpOnly"]) : nil
        }
        defer { server.stop() }
        let (api, _) = api(server)
        let endpoint = Endpoint<String>(.get, .absolute(URL(string: "http://127.0.0.1:\(server.port)/container")!), [], auth: .none) { response in
            "\(response.status) \(response.header("Set-Cookie") ?? "-")"
        }
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        api.perform(endpoint, options: CallOptions(accepting: { $0 == 200 || $0 == 302 })) { recorder.record($0) }
        #expect(recorder.wait().first?.testValue == "302 X-FMS-Session-Key=abc; HttpOnly")
        #expect(server.heads.count == 1)
    }

    @Test func htmlBadGatewayIsMinus1006() {
        let server = LoopbackServer { _ in LoopbackServer.http("502 Bad Gateway", headers: ["Content-Type": "text/html"], body: "<html>502</html>") }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<(String?, String)>(queueKey: Harness.key)
        api.login { recorder.record(($0, $1)) }
        #expect(recorder.wait().first?.1 == "-1006")
    }

    @Test func timeoutIsMinus1004() {
        let server = LoopbackServer { _ in nil } // never answers
        defer { server.stop() }
        let (api, _) = api(server, timeout: 1)
        let recorder = Recorder<(String?, String)>(queueKey: Harness.key)
        api.login { recorder.record(($0, $1)) }
        #expect(recorder.wait().first?.1 == "-1004")
    }

    @Test func cancellingARealRequest() {
        let server = LoopbackServer { _ in nil }
        defer { server.stop() }
        let (api, _) = api(server)
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        let request = api.perform(TestEndpoints.records(auth: .token("t"))) { recorder.record($0) }
        request.cancel()
        #expect(recorder.wait().first?.testFailureCode == "-1005")
        #expect(recorder.offQueue == 0)
    }
}
