import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a container download into memory is bounded whatever the server does, over both transports: an endless
// body ends at `maxResponseBytes` (-1011), a redirect loop at the redirect limit (-1007), and the streaming
// session's cookie never goes to another origin; no hop carries `Authorization`.

@Suite("Container downloads against a hostile server")
struct ContainerDownloadHostileServerTests {
    typealias Route = DownloadLeavesNoPartialFileTests.Route

    static func code(_ api: DataAPI, _ server: HostileServer, _ route: Route, path: String = "/Streaming/photo.bin") async -> String {
        let recorder = Recorder<String>()
        switch route {
        case .dataAPI:
            api.downloadContainer(url: URL(string: server.url + path)!) { _, code in recorder.record(code) }
        case .odata:
            FMOData(sharing: api).downloadContainer(from: "contacts", key: .number(1), field: "photo") { _, code in recorder.record(code) }
        }
        return await recorder.value().first ?? "no completion"
    }

    /// Held: an endless body into memory ends at the cap, and the transfer is stopped.
    @Test(arguments: Route.allCases, Wire.allCases)
    func anEndlessBodyEndsAtTheCap(_ route: Route, _ wire: Wire) async {
        let server = HostileServer { _, _ in
            .endless(head: HostileServer.head("200 OK", ["Content-Type": "application/octet-stream"]),
                     chunk: Data(repeating: 7, count: 16 * 1024), limit: 1 << 40)
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, wire, timeout: 60)
        #expect(await Self.code(api, server, route) == FMError.ClientCode.responseTooLarge)
        #expect(await server.waitForEnds(1))
        #expect(server.clientLeft(0))
    }

    /// Held: a streaming URL that redirects to itself for ever stops as an expired URL (-1014) once a request would go
    /// out again unchanged (the second redirect, the same URL and cookie).
    @Test(arguments: Wire.allCases)
    func aRedirectLoopEndsAtTheLimit(_ wire: Wire) async {
        let server = HostileServer { _, _ in
            .answer(HostileServer.head("302 Found", ["Location": "/Streaming/photo.bin", "Content-Length": "0",
                                                     "Set-Cookie": "X-FMS-Session-Key=k; Path=/"]))
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, wire, timeout: 60)
        #expect(await Self.code(api, server, .dataAPI) == FMError.ClientCode.containerURLExpired)
        #expect(server.heads.count == 2)
        #expect(!server.heads.contains { $0.lowercased().contains("authorization:") })
    }

    /// Held: a redirect to another origin (another port) is followed without the cookie; one to the same origin with it.
    @Test(arguments: Wire.allCases)
    func theCookieStaysWithItsOrigin(_ wire: Wire) async {
        let other = HostileServer { _, _ in
            .answer(HostileServer.head("200 OK", ["Content-Type": "image/png", "Content-Length": "4"]) + "data")
        }
        defer { other.stop() }
        let server = HostileServer { head, _ in
            let location = head.contains("/second.bin") ? other.url + "/elsewhere.bin" : "/second.bin"
            return .answer(HostileServer.head("302 Found", ["Content-Length": "0", "Set-Cookie": "X-FMS-Session-Key=secret; Path=/",
                                                            "Location": location]))
        }
        defer { server.stop() }
        let api = HostileServerTests().makeAPI(server, wire, timeout: 60)
        #expect(await Self.code(api, server, .dataAPI) == "0")
        #expect(server.heads.count == 2 && other.heads.count == 1)
        #expect(server.heads.last?.contains("X-FMS-Session-Key=secret") == true, "the cookie goes back to its origin")
        #expect(other.heads.first.map { !$0.contains("secret") && !$0.lowercased().contains("cookie:") } == true,
                "\(other.heads.first ?? "")")
        #expect(!(server.heads + other.heads).contains { $0.lowercased().contains("authorization:") })
    }
}
