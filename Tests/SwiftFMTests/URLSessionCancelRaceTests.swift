import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The URLSession transport ends a task one way only: by `cancel()` or by refusing its answer's head, never
/// both. On Linux, swift-corelibs-foundation ends a task twice when both reach it (the refused head completes
/// and unregisters the task; the cancel's second hop then looks it up and traps: "Trying to access a behaviour
/// for a task that in not in the registry"), and traps when a head is answered after a cancel stopped the
/// transfer ("Received response disposition, but we're not waiting for it").
@Suite("URLSession transport: a cancel and a refused head never both reach a task")
struct URLSessionCancelRaceTests {
    static let answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"

    /// One task, one way to end it: once a cancel is decided its head gets no answer, and once its head is
    /// refused no cancel follows (driven through the delegate, deterministically).
    @Test func aTaskIsEndedByItsCancelOrByItsRefusedHeadNeverBoth() throws {
        #if canImport(Darwin)
        let router = TaskRouter(serverTrust: nil)
        #else
        let router = TaskRouter()
        #endif
        let session = URLSession(configuration: .ephemeral, delegate: router, delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let url = try #require(URL(string: "http://127.0.0.1:9/fmi/data/vLatest/productInfo"))
        let head = try #require(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        /// What the delegate answered to `task`'s head (`nil`: nothing).
        func answer(_ task: URLSessionDataTask) -> URLSession.ResponseDisposition? {
            let given = Locked<URLSession.ResponseDisposition?>(nil)
            router.urlSession(session, dataTask: task, didReceive: head) { disposition in given.withLock { $0 = disposition } }
            return given.value
        }
        let refuse = FMTransportEvents(response: { _ in false }, data: { _ in false }, complete: { _ in })
        let accept = FMTransportEvents(response: { _ in true }, data: { _ in true }, complete: { _ in })

        // Cancel decided first: the head is not answered (never resumed, the task is not sent).
        let cancelled = session.dataTask(with: url)
        router.register(cancelled, events: accept)
        #expect(router.mayCancel(cancelled))
        #expect(answer(cancelled) == nil)
        #expect(!router.mayCancel(cancelled), "a second cancel")

        // Head refused first: `.cancel` ends the task, and no cancel follows.
        let refused = session.dataTask(with: url)
        router.register(refused, events: refuse)
        #expect(answer(refused) == .cancel)
        #expect(!router.mayCancel(refused))

        // Head accepted: the task may still be cancelled later, once.
        let accepted = session.dataTask(with: url)
        router.register(accepted, events: accept)
        #expect(answer(accepted) == .allow)
        #expect(router.mayCancel(accepted))
        #expect(!router.mayCancel(accepted))
    }

    /// The default URLSession transport (Apple platforms, Linux without libcurl) gives up on a silent server later
    /// than the call's deadline, so the deadline's cancel and URLSession's own timeout never reach a task at the
    /// same moment.
    @Test(arguments: [0.3, 1, 30, 600])
    func theDeadlineComesBeforeURLSessionsOwnTimeout(timeout: Double) throws {
        var configuration = FMConfiguration(host: "https://fms.example.com", database: "Contacts", username: "admin", password: "pw")
        configuration.timeout = timeout
        let transport = urlSessionTransport(for: configuration)
        #expect(transport.requestTimeout >= timeout + 5)
    }

    /// The last reference to the transport let go inside one of its own callbacks (on Linux: on URLSession's
    /// work queue, as when a client is released while its last call completes): the session is invalidated
    /// without waiting for that queue (which trapped: dispatch_sync on the queue already running).
    @Test func theTransportCanBeReleasedFromItsOwnCallback() throws {
        let server = HostileServer { _, _ in .answer(Self.answer) }
        defer { server.stop() }
        let url = try #require(URL(string: server.url + "/fmi/data/vLatest/productInfo"))
        let done = Recorder<Bool>()
        func start() {
            let holder = Locked<FMURLSessionTransport?>(FMURLSessionTransport())
            let events = FMTransportEvents(
                response: { _ in
                    holder.withLock { $0 = nil }   // the last reference goes here
                    return true
                },
                data: { _ in true },
                complete: { error in done.record(error == nil) })
            _ = holder.value?.send(FMTransportRequest(urlRequest: URLRequest(url: url)), events: events)
        }
        start()
        #expect(done.wait().count == 1)
    }

    /// The last reference to the transport let go while a request waits for its answer: the request is not
    /// cancelled behind the router's back (which can race a refused head into corelibs' "task not in registry"
    /// trap); it completes with its answer, and the session is invalidated once its tasks are done.
    @Test func aRequestInFlightWhenTheTransportIsReleasedCompletesWithItsAnswer() throws {
        let arrived = DispatchSemaphore(value: 0)
        let answer = DispatchSemaphore(value: 0)
        let server = HostileServer { _, _ in
            arrived.signal()
            _ = answer.wait(timeout: TestBound.deadline)
            return .answer(Self.answer)
        }
        defer { server.stop() }
        let url = try #require(URL(string: server.url + "/fmi/data/vLatest/productInfo"))
        let received = Locked(Data())
        let completed = Recorder<String>()
        var transport: FMURLSessionTransport? = FMURLSessionTransport()
        let events = FMTransportEvents(
            response: { _ in true },
            data: { chunk in received.withLock { $0.append(chunk) }; return true },
            complete: { error in completed.record(error.map { "\($0)" } ?? "ok") })
        _ = transport?.send(FMTransportRequest(urlRequest: URLRequest(url: url)), events: events)
        #expect(arrived.wait(timeout: TestBound.deadline) == .success)
        transport = nil   // the last reference goes while the request waits for its answer
        FMURLSessionTransport.invalidations.sync {}   // the session's invalidation has run
        answer.signal()
        #expect(completed.wait() == ["ok"])
        #expect(String(decoding: received.value, as: UTF8.self) == "{}")
    }

    /// A caller's cancel racing the answer's head, as the pipeline does it: the exchange is marked ended, then
    /// its task is cancelled from the caller's thread; a head arriving after the mark is refused. Every task
    /// completes exactly once and the process lives.
    @Test func aCancelRacingTheHeadEndsTheTaskOnce() {
        let server = HostileServer { _, _ in .answer(Self.answer) }
        defer { server.stop() }
        let transport = FMURLSessionTransport(maxConnectionsPerHost: 16)
        let rounds = 1_500
        let ends = Locked([Int](repeating: 0, count: rounds))
        let all = Recorder<Int>(expecting: rounds)
        let cancellers = DispatchQueue(label: "cancellers", attributes: .concurrent)
        for index in 0..<rounds {
            let ended = Locked(false)
            let events = FMTransportEvents(
                response: { _ in !ended.value },
                data: { _ in !ended.value },
                complete: { _ in
                    ends.withLock { $0[index] += 1 }
                    all.record(index)
                })
            guard let url = URL(string: server.url + "/fmi/data/vLatest/r/\(index)") else { return }
            let task = transport.send(FMTransportRequest(urlRequest: URLRequest(url: url)), events: events)
            let spins = Int.random(in: 0..<(200_000))
            cancellers.async {
                var x = 0
                for i in 0..<spins { x &+= i }   // a varying moment, so some cancels meet the head
                if x >= 0 { ended.withLock { $0 = true } }
                task.cancel()
            }
        }
        #expect(all.wait().count == rounds)
        #expect(ends.value.allSatisfy { $0 == 1 }, "\(Set(ends.value))")
    }
}
