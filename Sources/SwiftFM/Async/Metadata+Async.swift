import Foundation

extension DataAPI {
    /// Reads the Data API engine's product information.
    /// - Throws: ``FMError``.
    public func productInfo() async throws -> FMProductInfo {
        try await bridge(Endpoints.productInfo())
    }

    /// Lists the hosted databases (with the configured Basic credentials when there are some).
    /// - Throws: ``FMError``.
    public func databases() async throws -> [FMDatabase] {
        try await bridge(Endpoints.databases(auth: databasesAuth))
    }

    /// Lists the layouts of the database, with their folders.
    /// - Throws: ``FMError``.
    public func layouts() async throws -> [FMLayoutEntry] {
        try await bridge(Endpoints.layouts())
    }

    /// Reads a layout's fields, portals and value lists.
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: a record giving the context of record-dependent value lists.
    /// - Throws: ``FMError`` (`"105"` for a missing layout).
    public func layoutMetadata(layout: String, recordId: Int? = nil) async throws -> FMLayoutMetadata {
        try await bridge(Endpoints.layoutMetadata(layout: layout, recordId: recordId))
    }

    /// Lists the scripts of the database, with their folders.
    /// - Throws: ``FMError``.
    public func scripts() async throws -> [FMScriptEntry] {
        try await bridge(Endpoints.scripts())
    }
}
