import Foundation

// Found-set reads (finds, record and range reads, pages): what both surfaces take from the endpoint.
//
// The empty-found-set rule is the endpoint's (``Endpoint/noRecords``, decided in `Endpoints.swift`): the
// callback surface completes with an empty found set and FileMaker's code, the async surface returns the
// empty found set, the page walk ends. ``FMConfiguration/parallelDecoding`` says on how many threads the
// answer is decoded.

extension DataAPI {
    /// The most threads one answer is decoded on: 1 unless ``FMConfiguration/parallelDecoding`` is on.
    var decodingParts: Int { configuration.parallelDecoding ? JSONReader.cores : 1 }

    /// `endpoint` decoded as this client's configuration says.
    func reading<Value>(_ endpoint: Endpoint<Value>) -> Endpoint<Value> {
        endpoint.decoding(parts: decodingParts)
    }

    /// Performs a found-set read for the callback surface: `(found set?, code)`, "no records" an empty found set
    /// with its code (``Endpoint/foundSetPair(_:)``).
    @discardableResult
    func performRead<Value: EmptiableFoundSet>(_ endpoint: Endpoint<Value>,
                                               completion: @escaping (Value?, String) -> Void) -> FMRequest {
        perform(reading(endpoint)) { result in
            let pair = endpoint.foundSetPair(result)
            completion(pair.0, pair.1)
        }
    }

    /// Performs a found-set read for the async surface: "no records" returns the empty found set
    /// (``Endpoint/foundSet(after:)``); every other failure is thrown.
    func bridgeRead<Value: EmptiableFoundSet>(_ endpoint: Endpoint<Value>) async throws -> Value {
        do {
            return try await bridge(reading(endpoint))
        } catch {
            return try endpoint.foundSet(after: error)
        }
    }
}
