import Foundation

extension DataAPI {
    /// Performs a find. "No records match" (401) returns ``FMFoundSet/empty`` instead of throwing.
    /// - Throws: ``FMError`` for every other failure.
    public func find(layout: String, request: FMFindRequest) async throws -> FMFoundSet {
        try await noMatchAsEmpty(.empty) { try await bridge(Endpoints.find(layout: layout, request: request)) }
    }

    /// Performs a find with a raw body (`["query": …]`). 401 returns ``FMFoundSet/empty``.
    /// - Throws: ``FMError`` for every other failure.
    public func find(layout: String, payload: [String: Any]) async throws -> FMFoundSet {
        let endpoint = Endpoints.find(layout: layout, payload: payload)
        return try await noMatchAsEmpty(.empty) { try await bridge(endpoint) }
    }

    /// Performs a find decoded into `T`. 401 returns an empty typed found set.
    /// - Throws: ``FMError`` for every other failure.
    public func find<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, request: FMFindRequest) async throws -> FMTypedFoundSet<T> {
        try await noMatchAsEmpty(.empty) { try await bridge(Endpoints.find(as: type, layout: layout, request: request)) }
    }

    private func noMatchAsEmpty<Value>(_ empty: Value, _ operation: () async throws -> Value) async throws -> Value {
        do {
            return try await operation()
        } catch let error as FMError where error.isNoRecordsMatch {
            return empty
        }
    }
}
