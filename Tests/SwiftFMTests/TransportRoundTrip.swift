import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import SwiftFM

// One exchange through a transport, below `DataAPI`: what the transport tests send and read back.

/// What one exchange through a transport produced.
struct ExchangeOutcome: Sendable {
    var status: Int?
    var headers: [String: String] = [:]
    var body = Data()
    var error: URLError?
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Sends one request through `transport` and awaits its end.
func roundTrip(_ transport: any FMTransport, _ url: String, method: String = "GET", body: Data? = nil,
              headers: [String: String] = [:]) async -> ExchangeOutcome {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    // As given (setValue would drop a value it finds invalid: the hostile-header tests need it sent to the transport).
    if !headers.isEmpty { request.allHTTPHeaderFields = headers }
    request.httpBody = body
    let outcome = Locked(ExchangeOutcome())
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        _ = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
            response: { response in
                outcome.withLock {
                    $0.status = response.statusCode
                    $0.headers = response.allHeaderFields as? [String: String] ?? [:]
                }
                return true
            },
            data: { data in
                outcome.withLock { $0.body.append(data) }
                return true
            },
            complete: { error in
                outcome.withLock { $0.error = error as? URLError ?? error.map { _ in URLError(.unknown) } }
                continuation.resume()
            }))
    }
    return outcome.value
}
