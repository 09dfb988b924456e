import Foundation

extension DataAPI {
    /// Performs a find. "No records match" (401) returns ``FMFoundSet/empty`` instead of throwing.
    /// - Throws: ``FMError`` for every other failure.
    public func find(layout: String, request: FMFindRequest) async throws -> FMFoundSet {
        try await bridgeRead(Endpoints.find(layout: layout, request: request))
    }

    /// Performs a find with a raw body (`["query": …]`). 401 returns ``FMFoundSet/empty``.
    /// - Throws: ``FMError`` for every other failure.
    public func find(layout: String, payload: [String: Any]) async throws -> FMFoundSet {
        try await bridgeRead(Endpoints.find(layout: layout, payload: payload))
    }

    /// Performs a find decoded into `T`. 401 returns an empty typed found set.
    /// - Throws: ``FMError`` for every other failure.
    public func find<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, request: FMFindRequest) async throws -> FMTypedFoundSet<T> {
        try await bridgeRead(Endpoints.find(as: type, layout: layout, request: request))
    }
}
