import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SwiftFM

/// A transport that answers with the whole body at once: what the unit tests' stubs implement. It is
/// adapted to the library's streaming ``FMTransport`` by ``WholeBodyAdapter``.
protocol WholeBodyTransport: Sendable {
    func send(
        _ request: URLRequest,
        completion: @escaping @Sendable (Result<(HTTPURLResponse, Data), Error>) -> Void
    ) -> CancellableTask
}

/// Adapts a ``WholeBodyTransport`` to ``FMTransport``: the head, then the body in one piece, then the end.
struct WholeBodyAdapter: FMTransport {
    let base: WholeBodyTransport

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        var urlRequest = request.urlRequest
        if let file = request.bodyFile {
            urlRequest.httpBody = try? Data(contentsOf: file)
        }
        let task = base.send(urlRequest) { result in
            switch result {
            case .failure(let error):
                events.complete(error)
            case .success(let (response, body)):
                guard events.response(response) else { return events.complete(URLError(.cancelled)) }
                if !body.isEmpty, !events.data(body) { return events.complete(URLError(.cancelled)) }
                events.complete(nil)
            }
        }
        return WholeBodyTask(base: task)
    }
}

private struct WholeBodyTask: FMTransportTask {
    let base: CancellableTask
    func cancel() { base.cancel() }
}

extension DataAPI {
    /// A service over a whole-body transport (the unit tests' stubs).
    convenience init(
        configuration: FMConfiguration,
        transport: WholeBodyTransport,
        callbackQueue: DispatchQueue? = nil,
        tokenStore: FMTokenStore = FMMemoryTokenStore(),
        logger: FMLogHandler? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(configuration: configuration, transport: WholeBodyAdapter(base: transport), callbackQueue: callbackQueue,
                  tokenStore: tokenStore, logger: logger, now: now)
    }

    /// A service over a whole-body transport on `clock` (a wall clock and an elapsed clock a test moves apart).
    convenience init(configuration: FMConfiguration, transport: WholeBodyTransport, callbackQueue: DispatchQueue?, tokenStore: FMTokenStore,
                     logger: FMLogHandler?, clock: SessionClock) {
        self.init(configuration: configuration, transport: WholeBodyAdapter(base: transport), callbackQueue: callbackQueue,
                  tokenStore: tokenStore, logger: logger, clock: clock)
    }
}
