import Foundation

extension DataAPI {
    /// Reads the Data API engine's product information (`GET /productInfo`, no session needed).
    ///
    /// - Parameter completion: the product information or `nil`, and the code (`"0"` on success).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func productInfo(completion: sending @escaping (FMProductInfo?, String) -> Void) -> FMRequest {
        perform(Endpoints.productInfo()) { completion($0.value, $0.code) }
    }

    /// Lists the hosted databases (`GET /databases`).
    ///
    /// Sends the configured Basic credentials when there are some (a server that filters databases
    /// requires them), and no `Authorization` otherwise.
    ///
    /// - Parameter completion: the databases or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func databases(completion: sending @escaping ([FMDatabase]?, String) -> Void) -> FMRequest {
        perform(Endpoints.databases(auth: databasesAuth)) { completion($0.value, $0.code) }
    }

    /// Lists the layouts of the database, with their folders (`GET …/layouts`).
    ///
    /// - Parameter completion: the top-level entries (layouts and folders) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func layouts(completion: sending @escaping ([FMLayoutEntry]?, String) -> Void) -> FMRequest {
        perform(Endpoints.layouts()) { completion($0.value, $0.code) }
    }

    /// Reads a layout's fields, portals and value lists (`GET …/layouts/{layout}`).
    ///
    /// - Parameters:
    ///   - layout: the layout name (sent percent-encoded).
    ///   - recordId: a record giving the context of value lists that depend on related data.
    ///   - completion: the metadata or `nil`, and the code (`"105"` for a missing layout).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func layoutMetadata(layout: String, recordId: Int? = nil,
                               completion: sending @escaping (FMLayoutMetadata?, String) -> Void) -> FMRequest {
        perform(Endpoints.layoutMetadata(layout: layout, recordId: recordId)) { completion($0.value, $0.code) }
    }

    /// Lists the scripts of the database, with their folders (`GET …/scripts`).
    ///
    /// - Parameter completion: the top-level entries (scripts, separators, folders) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func scripts(completion: sending @escaping ([FMScriptEntry]?, String) -> Void) -> FMRequest {
        perform(Endpoints.scripts()) { completion($0.value, $0.code) }
    }

    /// Basic with the configured credentials when there are some, else none.
    var databasesAuth: Endpoint<[FMDatabase]>.Auth {
        configuration.credentials?.encodedValue == nil ? .none : .basic(encoded: nil)
    }
}
