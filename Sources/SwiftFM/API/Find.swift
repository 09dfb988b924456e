import Foundation

extension DataAPI {
    /// Performs a find (`POST …/layouts/{layout}/_find`).
    ///
    /// "No records match the request" (FileMaker 401) completes with an **empty** found set
    /// (``FMFoundSet/empty``, not `nil`) and the code `"401"`.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - request: the find requests (and/or/omit), sort, window, portals, response layout, scripts, date format.
    ///   - completion: the found set (empty for 401) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func find(layout: String, request: FMFindRequest,
                     completion: sending @escaping (FMFoundSet?, String) -> Void) -> FMRequest {
        performRead(Endpoints.find(layout: layout, request: request), completion: completion)
    }

    /// Performs a find with a raw body as old callers build it (`["query": [[…], […]]]`), sent as given.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - payload: the whole request body.
    ///   - completion: the found set (empty for 401) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func find(layout: String, payload: [String: Any],
                     completion: sending @escaping (FMFoundSet?, String) -> Void) -> FMRequest {
        performRead(Endpoints.find(layout: layout, payload: payload), completion: completion)
    }

    /// Performs a find and decodes the records into `T` with the FileMaker rules of ``FMRecord`` (empty fields,
    /// numbers as text, dates in `request.timeZone` or UTC, repetitions).
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - layout: the layout name.
    ///   - request: the find.
    ///   - completion: the typed found set (empty for 401) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func find<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, request: FMFindRequest,
                                   completion: sending @escaping (FMTypedFoundSet<T>?, String) -> Void) -> FMRequest {
        performRead(Endpoints.find(as: type, layout: layout, request: request), completion: completion)
    }
}
