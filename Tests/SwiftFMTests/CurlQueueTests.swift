#if os(Linux)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Requests past ``FMCurlTransport``'s connection limit wait in the transport, in order, and their silence counts only
/// once they run (a direct user of the transport with a small limit; SwiftFM's own limits keep this queue empty).
@Suite("libcurl transport: waiting for a connection")
struct CurlQueueTests {
    /// Two requests, one connection: the first answer drips for several idle timeouts (never silent that long), the
    /// second waits for the connection all that time and is then answered. Before, the idle timer counted from when
    /// the second was handed to libcurl, and it failed with `timedOut` while it had not been sent yet.
    @Test func aRequestWaitingForAConnectionIsNotSilent() async {
        let body = Data(repeating: UInt8(ascii: "a"), count: 60)
        let server = HostileServer { _, index in
            index == 0
                ? .drip(head: "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n", body: body, interval: 0.1)
                : .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 3, maxConnectionsPerHost: 1)
        async let first = roundTrip(transport, server.url + "/first")
        async let second = roundTrip(transport, server.url + "/second")
        let (one, two) = await (first, second)
        #expect(one.error == nil, "\(String(describing: one.error))")
        #expect(one.body == body)
        #expect(two.error == nil, "the waiting request timed out: \(String(describing: two.error))")
        #expect(two.text == "ok")
        #expect(server.heads.count == 2)
    }

    /// A waiting request that is cancelled ends once with `cancelled` and is never sent; the one behind it still runs.
    @Test func aWaitingRequestCancelledIsNeverSent() async throws {
        let server = HostileServer { _, index in
            index == 0 ? .silent : .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        // The first holds the only connection (the server never answers it); the second waits behind it.
        let held = PendingExchange(transport, server.url + "/held")
        let waiting = PendingExchange(transport, server.url + "/waiting")
        waiting.task.cancel()
        let waited = await waiting.end()
        #expect(waited?.code == .cancelled)
        held.task.cancel()
        _ = await held.end()
        let after = await roundTrip(transport, server.url + "/after")
        #expect(after.text == "ok")
        let heads = server.heads
        #expect(!heads.contains { $0.contains("/waiting") }, "a cancelled request was sent: \(heads)")
        #expect(heads.count == 2)
        #expect(waiting.ends == 1 && held.ends == 1)
    }
}

/// One exchange sent at once, whose end can be awaited later.
final class PendingExchange: @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: URLError??
    private var waiter: CheckedContinuation<URLError?, Never>?
    private var endCount = 0
    private(set) var task: any FMTransportTask = NoTask()

    private struct NoTask: FMTransportTask { func cancel() {} }

    init(_ transport: any FMTransport, _ url: String) {
        let request = URLRequest(url: URL(string: url)!)
        task = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
            response: { _ in true }, data: { _ in true },
            complete: { [self] error in
                let mapped = error.map { $0 as? URLError ?? URLError(.unknown) }
                let ready = lock.withLock { () -> CheckedContinuation<URLError?, Never>? in
                    endCount += 1
                    if outcome == nil { outcome = .some(mapped) }
                    defer { waiter = nil }
                    return waiter
                }
                ready?.resume(returning: mapped)
            }))
    }

    /// How often the exchange ended.
    var ends: Int { lock.withLock { endCount } }

    /// The exchange's error (`nil`: answered), once it ended.
    func end() async -> URLError? {
        await withCheckedContinuation { (continuation: CheckedContinuation<URLError?, Never>) in
            let done = lock.withLock { () -> URLError?? in
                if let outcome { return .some(outcome) }
                waiter = continuation
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}
#endif
