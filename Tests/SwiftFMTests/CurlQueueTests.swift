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
    /// Two requests, one connection: the first answer drips for longer than the idle timeout (never silent that long), the
    /// second waits for the connection all that time and is then answered. Before, the idle timer counted from when
    /// the second was handed to libcurl, and it failed with `timedOut` while it had not been sent yet.
    @Test func aRequestWaitingForAConnectionIsNotSilent() async {
        // 7 s of drip against a 5 s idle timeout: the second request waits longer than the timeout, while the
        // first is never silent for more than a tenth of a second (5 s of slack for a loaded machine).
        let body = Data(repeating: UInt8(ascii: "a"), count: 70)
        let server = HostileServer { head, _ in
            head.contains("/first")
                ? .drip(head: "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n", body: body, interval: 0.1)
                : .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 5, maxConnectionsPerHost: 1)
        // The second is sent once the first holds the connection (its head arrived): before, the two were sent
        // from concurrent child tasks, and on a busy machine the second could take the connection first.
        async let first = roundTrip(transport, server.url + "/first")
        #expect(await server.waitForHeads(1))
        let two = await roundTrip(transport, server.url + "/second")
        let one = await first
        #expect(one.error == nil, "\(String(describing: one.error))")
        #expect(one.body == body)
        #expect(two.error == nil, "the waiting request timed out: \(String(describing: two.error))")
        #expect(two.text == "ok")
        #expect(server.heads.count == 2 && server.heads[0].contains("/first"))
    }

    /// A waiting request that is cancelled ends once with `cancelled` and is never sent; the one behind it still runs.
    @Test func aWaitingRequestCancelledIsNeverSent() async throws {
        let server = HostileServer { head, _ in
            head.contains("/held") ? .silent : .answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        // The first holds the only connection (the server never answers it); the second waits behind it. The
        // second starts once the first's head arrived: on a busy machine the first could still be unsent when it
        // is cancelled below, and then never reach the server.
        let held = PendingExchange(transport, server.url + "/held")
        #expect(await server.waitForHeads(1))
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

/// A cancel that reaches ``FMCurlTransport``'s engine after its transfer ended (the user cancelled while the answer
/// was arriving: the command is applied on the engine's next turn) must touch nothing else. Before, the engine looked
/// the ended transfer up by its old number in its origin's queue of requests waiting for a connection; that queue
/// is dropped when it empties and a new one numbers from 1 again, so the stale cancel took out whichever request now
/// waited under that number: it was never sent and never completed.
@Suite("libcurl transport: a late cancel and the requests waiting for a connection")
struct CurlQueueCancelRaceTests {
    @Test func aCancelArrivingAfterTheEndLeavesTheWaitingRequestsAlone() async throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        let server = HostileServer { head, _ in head.contains("/held") ? .silent : .answer(ok) }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        let engine = try #require(transport.engine)

        // `first` holds the only connection; `ended` waits for it (number 1 in the origin's queue), then runs and
        // is answered. The queue emptied when `ended` left it.
        let first = PendingExchange(transport, server.url + "/held/1")
        let ended = PendingExchange(transport, server.url + "/ended")
        first.task.cancel()
        #expect(await first.end()?.code == .cancelled)
        #expect(await ended.end() == nil)
        let endedTransfer = try #require(ended.task as? CurlTransfer)

        // `second` holds the connection again; `victim` waits for it, in a new queue.
        let second = PendingExchange(transport, server.url + "/held/2")
        let victim = PendingExchange(transport, server.url + "/victim")
        // The cancel of `ended`, posted before its end and applied after it (the race, made certain).
        engine.cancel(endedTransfer)
        second.task.cancel()
        #expect(await second.end()?.code == .cancelled)

        // The waiting request still runs once the connection frees, and ends exactly once.
        let outcome = await victim.end()
        #expect(outcome == nil, "the waiting request ended with \(String(describing: outcome))")
        #expect(server.count("/victim") == 1)
        #expect(ended.ends == 1 && victim.ends == 1)

        // The origin's count of connections is sound: a later request still starts.
        let after = await roundTrip(transport, server.url + "/after")
        #expect(after.text == "ok")
    }

    /// The same late cancel for a request that never waited (it found a free connection): the requests waiting
    /// for the origin meanwhile are not dropped with it. Before, the engine took the origin's whole queue out to
    /// look for the transfer and, not finding it, never put it back.
    @Test func aLateCancelOfARequestThatNeverWaitedDropsNoQueue() async throws {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        let server = HostileServer { head, _ in head.contains("/held") ? .silent : .answer(ok) }
        defer { server.stop() }
        let transport = FMCurlTransport(idleTimeout: 300, maxConnectionsPerHost: 1)
        let engine = try #require(transport.engine)

        let quick = PendingExchange(transport, server.url + "/quick")
        #expect(await quick.end() == nil)
        let quickTransfer = try #require(quick.task as? CurlTransfer)

        let held = PendingExchange(transport, server.url + "/held")
        let waiters = (0..<3).map { PendingExchange(transport, server.url + "/waiter/\($0)") }
        engine.cancel(quickTransfer)
        held.task.cancel()
        #expect(await held.end()?.code == .cancelled)
        for (index, waiter) in waiters.enumerated() {
            let outcome = await waiter.end()
            #expect(outcome == nil, "waiter \(index) ended with \(String(describing: outcome))")
            #expect(waiter.ends == 1)
        }
        #expect(server.count("/waiter/") == 3)
        #expect(quick.ends == 1)
    }
}

/// One exchange sent at once; ``end()`` waits for its end on a thread of its own, under the hang guard.
final class PendingExchange: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var outcome: URLError?
    private var count = 0
    private(set) var task: any FMTransportTask = NoTask()

    private struct NoTask: FMTransportTask { func cancel() {} }

    convenience init(_ transport: any FMTransport, _ url: String) {
        self.init(transport, URL(string: url)!)
    }

    /// An exchange with `url` as it is (a relative URL too, which `URLRequest` makes absolute).
    init(_ transport: any FMTransport, _ url: URL) {
        let request = URLRequest(url: url)
        task = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
            response: { _ in true }, data: { _ in true },
            complete: { [self] error in
                lock.withLock {
                    count += 1
                    if count == 1 { outcome = error.map { $0 as? URLError ?? URLError(.unknown) } }
                }
                done.signal()
            }))
    }

    /// How often the exchange ended.
    var ends: Int { lock.withLock { count } }

    /// The exchange's error (`nil`: answered); `URLError(.timedOut)` from the hang guard when it never ended.
    func end(sourceLocation: SourceLocation = #_sourceLocation) async -> URLError? {
        let result = await onOwnThread { [done] in done.wait(timeout: TestBound.deadline) }
        #expect(result == .success, "no end within \(Int(TestBound.seconds)) s (hang guard)", sourceLocation: sourceLocation)
        guard result == .success else { return URLError(.timedOut) }
        done.signal()   // a later end() returns at once too
        return lock.withLock { outcome }
    }
}
#endif
