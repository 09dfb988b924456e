#if os(Linux)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// ``FMCurlTransport`` hands an ended transfer's easy handle (reset) to the next one: nothing of a request — its
/// method, body, headers — reaches the server with the next, on the same connection or a new one.
@Suite("libcurl transport: a reused handle carries nothing over")
struct CurlHandleReuseTests {
    @Test(arguments: [false, true])
    func theNextRequestSendsOnlyItsOwn(keepAlive: Bool) async {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "\r\nok"
        let server = keepAlive ? HostileServer { _, _, _ in .answer(ok) } : HostileServer { _, _ in .answer(ok) }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 60, maxConnectionsPerHost: 1)
        let first = await roundTrip(transport, server.url + "/first", method: "POST", body: Data("secret-body".utf8),
                                    headers: ["X-Leak": "1", "Content-Type": "text/plain", "Authorization": "Bearer first"])
        #expect(first.text == "ok")
        let second = await roundTrip(transport, server.url + "/second", method: "DELETE")
        let third = await roundTrip(transport, server.url + "/third")
        let fourth = await roundTrip(transport, server.url + "/fourth", method: "PATCH", body: Data("{}".utf8))
        #expect(second.text == "ok" && third.text == "ok" && fourth.text == "ok")
        let requests = server.requests
        guard requests.count == 4 else {
            Issue.record("\(requests.count) requests reached the server")
            return
        }
        for request in requests.dropFirst() {
            let head = request.head.lowercased()
            #expect(!head.contains("x-leak") && !head.contains("bearer first") && !head.contains("text/plain"), "\(request.head)")
        }
        #expect(requests[1].head.hasPrefix("DELETE /second ") && requests[1].body.isEmpty)
        #expect(requests[2].head.hasPrefix("GET /third ") && requests[2].body.isEmpty)
        #expect(!requests[2].head.lowercased().contains("content-length"))
        #expect(requests[3].head.hasPrefix("PATCH /fourth ") && requests[3].body == Data("{}".utf8))
    }
}
#endif
