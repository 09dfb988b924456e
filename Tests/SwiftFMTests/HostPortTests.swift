import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A host whose port is out of range (`host:99999`, `:0`, `:65536`, a 20-digit port) is a configuration
/// error (-1001) reported without sending anything, not a transport error (-1003) from the network.
@Suite("Malformed hosts")
struct HostPortTests {
    func outcome(host: String) -> (Result<String, FMError>?, Int) {
        let harness = Harness(configuration: FMConfiguration(host: host, database: "D", username: "a", password: "b")) { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(200, Bodies.value("x"))
        }
        let recorder = Recorder<Result<String, FMError>>(queueKey: Harness.key)
        harness.api.perform(TestEndpoints.records()) { recorder.record($0) }
        let values = recorder.wait()
        harness.drain()
        #expect(values.count == 1)
        return (values.first, harness.stub.requests.count)
    }

    @Test(arguments: ["host:99999", "https://host:0", "http://h:65536", "http://h:18446744073709551617",
                      "http://127.0.0.1:99999999999999999999999", "http://", ":::", "ho st", "host:-1", "http://[::1"])
    func invalidHostsAreConfigurationErrors(host: String) {
        let (result, sent) = outcome(host: host)
        #expect(result?.testFailureCode == FMError.ClientCode.invalidConfiguration)
        #expect(sent == 0)
        #expect(FMConfiguration(host: host, database: "D", credentials: nil).baseURL == nil)
    }

    @Test(arguments: ["host:1", "host:65535", "http://127.0.0.1:3000", "[::1]:3000", "fms.example.com", "https://proxy.example.com/prefix"])
    func validPortsStillWork(host: String) {
        let (result, sent) = outcome(host: host)
        #expect(result?.testValue == "x")
        #expect(sent == 2)
    }
}
