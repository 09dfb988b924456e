import Foundation

extension DataAPI {
    /// Sets global fields for the session (`TO::gField` → value).
    /// - Parameter fields: global field name → value.
    /// - Returns: `true` (failures throw).
    /// - Throws: ``FMError`` (`-1002` for `nil`/non-JSON values).
    @discardableResult
    public func setGlobals(_ fields: [String: Any]) async throws -> Bool {
        try await bridge(Endpoints.setGlobals(fields))
    }
}
