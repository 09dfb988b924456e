import Foundation

extension DataAPI {
    /// Sets global fields for the session (`PATCH …/globals` with `{"globalFields": fields}`).
    ///
    /// Names must be fully qualified (`TO::gField`). Values follow the payload rules: strings and numbers;
    /// `nil`/`NSNull` or non-JSON values complete with `-1002` without sending anything.
    ///
    /// - Parameters:
    ///   - fields: global field name → value.
    ///   - completion: `true` on success, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func setGlobals(_ fields: [String: Any], completion: sending @escaping (Bool, String) -> Void) -> FMRequest {
        perform(Endpoints.setGlobals(fields)) { completion($0.value ?? false, $0.code) }
    }
}
