import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the body of one answer goes.
enum BodySink: Sendable {
    /// Collected in memory, failing with `-1011` past `cap` bytes (after content decoding).
    case memory(cap: Int)
    /// A 200 answer's body streams into `file` (created anew, removed on failure); any other status is
    /// collected in memory under `cap`. `progress` is told (bytes written, expected length or -1), never on the
    /// transport's thread: one ``ProgressReports`` per download, made with its sink, which every exchange of the
    /// download (its redirects' hops, the attempts its retry policy sends again) reports through, so that the
    /// caller's callback runs one report at a time, in order, and a broken-off attempt's last count is never
    /// reported beside or after those of the attempt that follows it.
    case file(URL, cap: Int, progress: ProgressReports?)
}

/// Where a streamed download's `progress` callback runs: a serial queue of its own (labelled `SwiftFM.progress`),
/// never the transport's thread, so that a callback, however slow (or one that waits), never holds the transfer
/// back, and never the callback queue, which the caller may be blocking.
///
/// One per download (``BodySink/file(_:cap:progress:)``), shared by all its exchanges. Reports run one at a time,
/// in order: within one exchange the bytes written never decrease (an attempt sent again counts from 0). They are
/// coalesced: while a callback runs, the counts that arrive meanwhile are replaced by the latest, which is reported next (a slow callback sees
/// fewer reports, never a stale one, and the last count is always reported). The call's completion does not wait
/// for a report: one may run after it.
final class ProgressReports: Sendable {
    private struct State {
        var latest: (written: Int64, expected: Int64)?
        var scheduled = false
    }
    private let report: @Sendable (Int64, Int64) -> Void
    private let queue = DispatchQueue(label: "SwiftFM.progress")
    private let state = Locked(State())
    /// `true` on every such queue (tests tell where a report runs).
    static let queueKey = DispatchSpecificKey<Bool>()

    init(_ report: @escaping @Sendable (Int64, Int64) -> Void) {
        self.report = report
        queue.setSpecific(key: Self.queueKey, value: true)
    }

    /// Hands on (bytes written, expected length or -1) without waiting for the callback.
    func post(written: Int64, expected: Int64) {
        let schedule = state.withLock { state -> Bool in
            state.latest = (written, expected)
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        if schedule { queue.async { [self] in drain() } }
    }

    /// Reports the latest count until none is waiting (on ``queue``).
    private func drain() {
        while let next = state.withLock({ state -> (written: Int64, expected: Int64)? in
            defer { state.latest = nil }
            if state.latest == nil { state.scheduled = false }
            return state.latest
        }) {
            report(next.written, next.expected)
        }
    }
}

/// The answer of one exchange.
struct ExchangeAnswer: Sendable {
    /// The status and the headers.
    var head: AnswerHead
    /// The body collected in memory (empty when it went to a file).
    var body: Data
    /// The file the body was written to, when the sink was a file and the status 200.
    var file: URL?
}

/// How one exchange failed.
struct ExchangeFailure: Error, Sendable {
    var error: FMError
    /// `true` when no byte of an answer arrived (refused, reset or closed before the response head):
    /// the request may never have reached FileMaker.
    var beforeAnswer: Bool
}

/// One HTTP exchange through an ``FMTransport``: counts the answer's bytes against the cap, streams to a
/// file when asked, and completes exactly once. It knows nothing of sessions, retries or deadlines:
/// whoever started it cancels it.
///
/// Its `finished` flag is the one guard kept outside ``CallState``, and it guards the transport, not the call:
/// an exchange ends from several sources the call does not control (the transport's completion, a callback
/// that refuses the answer on another queue, the call's cancel), and each end must close its file, give its
/// concurrency slot back once and report once. Which report ends the call is still ``CallState``'s decision.
final class Exchange: @unchecked Sendable {
    // @unchecked: mutable state is behind `state`'s lock.
    private struct State {
        var head: AnswerHead?
        /// The head's expected length, read once (a progress report per chunk reads it).
        var expectedLength: Int64 = -1
        var body = Data()
        var received = 0
        var failure: ExchangeFailure?
        var output: FileHandle?
        var completion: (@Sendable (consuming Result<ExchangeAnswer, ExchangeFailure>) -> Void)?
        var task: (any FMTransportTask)?
        var finished = false
    }
    private let state: Locked<State>
    private let sink: BodySink
    /// The sink's `progress`, handed on off the transport's thread.
    private let progress: ProgressReports?
    /// The request's URL: a failed TLS handshake names the scheme to use instead.
    private let url: URL?

    private init(sink: BodySink, url: URL?, completion: @escaping @Sendable (consuming Result<ExchangeAnswer, ExchangeFailure>) -> Void) {
        self.sink = sink
        if case .file(_, _, let reports?) = sink { progress = reports } else { progress = nil }
        self.url = url
        self.state = Locked(State(completion: completion))
    }

    /// Sends `request` and calls `completion` once, on the transport's queue. `handOver` gets the exchange,
    /// whose ``cancel(with:)`` ends it early, before anything is sent: an exchange it cancels (its call ended
    /// meanwhile) sends nothing.
    static func start(
        _ request: FMTransportRequest, through transport: any FMTransport, sink: BodySink,
        handOver: (Exchange) -> Void,
        completion: @escaping @Sendable (consuming Result<ExchangeAnswer, ExchangeFailure>) -> Void
    ) {
        let exchange = Exchange(sink: sink, url: request.urlRequest.url, completion: completion)
        handOver(exchange)
        guard !exchange.state.withLock({ $0.finished }) else { return }
        let events = FMTransportEvents(
            response: { [exchange] in exchange.head(AnswerHead($0)) },
            data: { [exchange] in exchange.bytes($0) },
            complete: { [exchange] in exchange.end($0) },
            head: { [exchange] in exchange.head(AnswerHead(status: $0, fields: $1)) }
        )
        let task = transport.send(request, events: events)
        let finished = exchange.state.withLock { state -> Bool in
            if state.finished { return true }
            state.task = task
            return false
        }
        if finished { task.cancel() }
    }

    /// Ends the exchange now with `error` (a deadline, a cancel) and cancels the transfer.
    func cancel(with error: FMError) {
        finish(.failure(ExchangeFailure(error: error, beforeAnswer: false)))
    }

    private var cap: Int {
        switch sink {
        case .memory(let cap), .file(_, let cap, _): cap
        }
    }

    private func head(_ head: AnswerHead) -> Bool {
        var failed = false
        let proceed = state.withLock { state -> Bool in
            guard !state.finished, state.failure == nil, state.head == nil else { return false }
            state.head = head
            let expectedLength = head.expectedContentLength
            state.expectedLength = expectedLength
            // A declared length within the cap: one allocation for the body instead of one per doubling (at most
            // 64 MiB ahead of the bytes, whatever a server declares).
            if case .memory(let cap) = sink, expectedLength > 0, expectedLength <= Int64(cap) {
                state.body.reserveCapacity(Int(min(expectedLength, 64 << 20)))
            }
            if case .file(let url, _, _) = sink, head.status == 200 {
                let manager = FileManager.default
                try? manager.removeItem(at: url)
                guard manager.createFile(atPath: url.path, contents: nil), let handle = try? FileHandle(forWritingTo: url) else {
                    state.failure = ExchangeFailure(error: .fileError("Cannot create \(url.path)"), beforeAnswer: false)
                    failed = true
                    return false
                }
                state.output = handle
            }
            return true
        }
        if failed { finishRefused() }
        return proceed
    }

    private func bytes(_ data: Data) -> Bool {
        var failed = false
        var progress: (written: Int64, expected: Int64)?
        let proceed = state.withLock { state -> Bool in
            guard !state.finished, state.failure == nil else { return false }
            state.received += data.count
            if let output = state.output {
                do {
                    try output.write(contentsOf: data)
                } catch {
                    state.failure = ExchangeFailure(error: FMError(code: FMError.ClientCode.fileError, message: "Cannot write the container file",
                                                                   underlying: String(describing: error)), beforeAnswer: false)
                    failed = true
                    return false
                }
                progress = (Int64(state.received), state.expectedLength)
                return true
            }
            guard state.received <= cap else {
                state.failure = ExchangeFailure(error: .responseTooLarge(limit: cap), beforeAnswer: false)
                failed = true
                return false
            }
            state.body.append(data)
            return true
        }
        if failed { finishRefused() }
        if let reached = progress { self.progress?.post(written: reached.written, expected: reached.expected) }
        return proceed
    }

    /// A transport callback refused the answer (`state.failure` is set, so every later callback is refused
    /// at once): complete with that failure on another queue. The transport may call back on a queue where
    /// whatever the completion starts next — the next request under the concurrency cap, a retry — would
    /// deadlock or wait (URLSession's own work queue on Linux, see ``FMURLSessionTransport``).
    private func finishRefused() {
        DispatchQueue.global().async { [self] in
            guard let failure = state.withLock({ $0.failure }) else { return }
            finish(.failure(failure))
        }
    }

    private func end(_ error: Error?) {
        if let refused = state.withLock({ $0.failure }) {
            finish(.failure(refused))
            return
        }
        guard let error else {
            var answer = state.withLock { state -> ExchangeAnswer? in
                guard let head = state.head else { return nil }
                var file: URL?
                if let output = state.output, case .file(let url, _, _) = sink {
                    try? output.close()
                    state.output = nil
                    file = url
                }
                return ExchangeAnswer(head: head, body: state.body, file: file)
            }
            // Moved on: the call's completion holds the only reference to the body (see ``Delivery``).
            if answer != nil {
                finish(.success(answer.take()!))
            } else {
                finish(.failure(ExchangeFailure(error: .transport("no response"), beforeAnswer: true)))
            }
            return
        }
        let beforeAnswer = state.withLock { $0.head == nil }
        finish(.failure(ExchangeFailure(error: FMError.fromTransport(error, url: url, answerStarted: !beforeAnswer), beforeAnswer: beforeAnswer)))
    }

    private func finish(_ result: consuming Result<ExchangeAnswer, ExchangeFailure>) {
        let (completion, task, output) = state.withLock { state -> ((@Sendable (consuming Result<ExchangeAnswer, ExchangeFailure>) -> Void)?, (any FMTransportTask)?, FileHandle?) in
            guard !state.finished else { return (nil, nil, nil) }
            state.finished = true
            defer { state.completion = nil; state.task = nil; state.output = nil; state.body = Data() }
            return (state.completion, state.task, state.output)
        }
        guard let completion else { return }
        guard result.isFailure else { return completion(result) }
        if let output, case .file(let url, _, _) = sink {
            try? output.close()
            try? FileManager.default.removeItem(at: url)
        }
        // The call completes first: stopping a transfer may wait for the transport's own queue, busy with the
        // very answer being refused.
        completion(result)
        task?.cancel()
    }
}

extension FMError {
    /// An answer passed ``FMConfiguration/maxResponseBytes``.
    static func responseTooLarge(limit: Int) -> FMError {
        FMError(code: ClientCode.responseTooLarge,
                message: "The answer passed the limit of \(limit) bytes (FMConfiguration.maxResponseBytes) and was cancelled")
    }
}

extension Result where Success == ExchangeAnswer {
    /// `true` for a failure.
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }

    /// `true` for an answer whose status `accepting` accepts.
    func isAccepted(by accepting: (Int) -> Bool) -> Bool {
        guard case .success(let answer) = self else { return false }
        return accepting(answer.head.status)
    }
}
