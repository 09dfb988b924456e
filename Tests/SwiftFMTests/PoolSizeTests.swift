import Foundation
import Testing
@testable import SwiftFM

// A careless pool size (`Int.max`, 2⁴⁰, negative, zero) is clamped: never a crash, never a slot per value.

@Suite("Careless configurations of the session pool")
struct PoolSizeTests {
    /// A pool size of `Int.max` (a careless "as many as possible") must not allocate a slot per value.
    @Test(arguments: [Int.max, 1 << 40, -5, 0])
    func anAbsurdPoolSizeIsClampedNotACrash(size: Int) {
        let stub = StubTransport { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            return .json(200, Bodies.value("ok"))
        }
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.sessionPoolSize = size
        let api = DataAPI(configuration: configuration, transport: stub)
        #expect(api.pool.size >= 1 && api.pool.size <= SessionPool.maximumSize)
        let call = Recorder<Result<String, FMError>>()
        api.perform(TestEndpoints.records()) { call.record($0) }
        #expect(call.wait().first?.testValue == "ok")
    }
}
