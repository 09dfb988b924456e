import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// A call holds its pipeline (CallContext), not its DataAPI: a DataAPI dropped while calls are in flight leaves
// them to finish, each completion arriving exactly once, through a login still to come and a 952 replay.
@Suite("A DataAPI dropped with calls in flight")
struct DroppedDataAPITests {
    private static func configuration() -> FMConfiguration {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = 1
        configuration.retry = .none
        configuration.timeout = TestBound.seconds
        return configuration
    }

    /// The calls wait for a login held by the server; the DataAPI goes; the login is answered: every call ends once, answered.
    @Test func callsWaitingForALoginFinishOnceAfterTheirDataAPIIsGone() {
        let loginArrived = DispatchSemaphore(value: 0)
        let stub = StubTransport { request in
            if isLogin(request) {
                loginArrived.signal()
                return .hold
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            return .json(200, Bodies.value("ok"))
        }
        let total = 5
        let results = Recorder<String>(expecting: total)
        weak var dropped: DataAPI?
        do {
            let api = DataAPI(configuration: Self.configuration(), transport: stub)
            dropped = api
            for _ in 0..<total {
                api.perform(TestEndpoints.records()) { results.record($0.testFailureCode ?? ($0.value ?? "nil")) }
            }
        }
        #expect(dropped == nil, "a call in flight kept its DataAPI")
        #expect(loginArrived.wait(timeout: TestBound.deadline) == .success)
        guard let login = stub.tasks.first else {
            Issue.record("the login never reached the transport")
            return
        }
        let url = URL(string: "https://fms.example.com/fmi/data/vLatest/databases/Contacts/sessions")!
        login.complete(.success((HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                                  headerFields: ["Content-Type": "application/json"])!, Data(Bodies.login().utf8))))
        let codes = results.wait()
        #expect(codes == Array(repeating: "ok", count: total))
        #expect(stub.count("POST", "/sessions") == 1)
    }

    /// A 952 on a call whose DataAPI is gone: the session is renewed and the call replayed, once.
    @Test func aReplayAfter952FinishesOnceAfterTheDataAPIIsGone() {
        let logins = Locked(0)
        let expired = Locked(false)
        let stub = StubTransport { request in
            if isLogin(request) {
                let n = logins.withLock { c -> Int in c += 1; return c }
                return .json(200, Bodies.login(String(format: "%052d", n)))
            }
            if request.httpMethod == "DELETE" { return .json(200, Bodies.ok) }
            let first = expired.withLock { sent -> Bool in defer { sent = true }; return !sent }
            return first ? .json(401, Bodies.expired) : .json(200, Bodies.value("ok"))
        }
        let total = 4
        let results = Recorder<String>(expecting: total)
        do {
            let api = DataAPI(configuration: Self.configuration(), transport: stub)
            for _ in 0..<total {
                api.perform(TestEndpoints.records()) { results.record($0.testFailureCode ?? ($0.value ?? "nil")) }
            }
        }
        let codes = results.wait()
        #expect(codes == Array(repeating: "ok", count: total))
        #expect(logins.value == 2)
    }
}
