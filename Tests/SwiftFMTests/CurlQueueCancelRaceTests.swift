#if os(Linux)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

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
        let first = Exchange(transport, server.url + "/held/1")
        let ended = Exchange(transport, server.url + "/ended")
        first.task.cancel()
        #expect(await first.end()?.code == .cancelled)
        #expect(await ended.end() == nil)
        let endedTransfer = try #require(ended.task as? CurlTransfer)

        // `second` holds the connection again; `victim` waits for it, in a new queue.
        let second = Exchange(transport, server.url + "/held/2")
        let victim = Exchange(transport, server.url + "/victim")
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

        let quick = Exchange(transport, server.url + "/quick")
        #expect(await quick.end() == nil)
        let quickTransfer = try #require(quick.task as? CurlTransfer)

        let held = Exchange(transport, server.url + "/held")
        let waiters = (0..<3).map { Exchange(transport, server.url + "/waiter/\($0)") }
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
private final class Exchange: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var outcome: URLError?
    private var count = 0
    private(set) var task: any FMTransportTask = NoTask()

    private struct NoTask: FMTransportTask { func cancel() {} }

    init(_ transport: any FMTransport, _ url: String) {
        let request = URLRequest(url: URL(string: url)!)
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
