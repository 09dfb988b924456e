import Foundation

extension DataAPI {
    /// Creates a record; see ``createRecord(layout:fieldData:portalData:options:completion:)``.
    /// - Throws: ``FMError`` (`-1002` for a payload that cannot be sent).
    @discardableResult
    public func createRecord(layout: String, fieldData: [String: Any], portalData: [String: [[String: Any]]]? = nil,
                             options: FMWriteOptions = .init()) async throws -> FMRecordReference {
        try await bridge(Endpoints.createRecord(layout: layout, fieldData: fieldData, portalData: portalData, options: options))
    }

    /// Creates a record whose `fieldData` is encoded from an `Encodable` value.
    /// - Throws: ``FMError`` (`-1002` when `fields` cannot be encoded).
    @discardableResult
    public func createRecord<F: Encodable>(layout: String, fields: F, portalData: [String: [[String: Any]]]? = nil,
                                           options: FMWriteOptions = .init()) async throws -> FMRecordReference {
        try await bridge(Endpoints.createRecord(layout: layout, fields: fields, portalData: portalData, options: options))
    }

    /// Creates a record from a raw body (`["fieldData": …]`).
    /// - Throws: ``FMError``.
    @discardableResult
    public func createRecord(layout: String, payload: [String: Any]) async throws -> FMRecordReference {
        try await bridge(Endpoints.createRecord(layout: layout, payload: payload))
    }

    /// Reads one record as a raw found set.
    /// - Throws: ``FMError`` (`"101"` when the record is missing).
    public func getRecord(layout: String, recordId: Int, options: FMReadOptions = .init()) async throws -> FMFoundSet {
        try await bridgeRead(Endpoints.getRecord(layout: layout, recordId: recordId, options: options))
    }

    /// Reads one record decoded into `T`.
    /// - Throws: ``FMError`` (`-1007` when `T` does not match).
    public func getRecord<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, recordId: Int,
                                                          options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        try await bridgeRead(Endpoints.getRecord(as: type, layout: layout, recordId: recordId, options: options))
    }

    /// Reads a range of records as a raw found set. An offset past the end (FileMaker's 401) or an empty
    /// table (FileMaker Server's 101) returns ``FMFoundSet/empty``, as a find that matches nothing.
    /// - Throws: ``FMError`` for every other failure.
    public func getRecords(layout: String, offset: Int? = nil, limit: Int? = nil, sort: [FMSort] = [],
                           options: FMReadOptions = .init()) async throws -> FMFoundSet {
        try await bridgeRead(Endpoints.getRecords(layout: layout, offset: offset, limit: limit, sort: sort, options: options))
    }

    /// Reads a range of records decoded into `T`; past the end (401) or an empty table (101) an empty typed
    /// found set.
    /// - Throws: ``FMError`` for every other failure.
    public func getRecords<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, offset: Int? = nil, limit: Int? = nil,
                                                           sort: [FMSort] = [], options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        try await bridgeRead(Endpoints.getRecords(as: type, layout: layout, offset: offset, limit: limit, sort: sort, options: options))
    }

    /// Edits a record; see ``editRecord(layout:recordId:fieldData:portalData:modId:deleteRelated:options:completion:)-(_,Int,_,_,_,_,_,_)``.
    /// - Throws: ``FMError`` (`"306"` when `modId` no longer matches).
    @discardableResult
    public func editRecord(layout: String, recordId: Int, fieldData: [String: Any],
                           portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                           deleteRelated: [String] = [], options: FMWriteOptions = .init()) async throws -> FMEditResult {
        try await bridge(Endpoints.editRecord(layout: layout, recordId: recordId, fieldData: fieldData, portalData: portalData,
                                              modId: modId, deleteRelated: deleteRelated, options: options))
    }

    /// Edits a record with `fieldData` encoded from an `Encodable` value.
    /// - Throws: ``FMError``.
    @discardableResult
    public func editRecord<F: Encodable>(layout: String, recordId: Int, fields: F,
                                         portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                                         deleteRelated: [String] = [], options: FMWriteOptions = .init()) async throws -> FMEditResult {
        try await bridge(Endpoints.editRecord(layout: layout, recordId: recordId, fields: fields, portalData: portalData,
                                              modId: modId, deleteRelated: deleteRelated, options: options))
    }

    /// Edits a record with a raw body; `modId`, when given, is added to the body as a string.
    /// - Throws: ``FMError``.
    @discardableResult
    public func editRecord(layout: String, recordId: Int, payload: [String: Any], modId: Int? = nil) async throws -> FMEditResult {
        try await bridge(Endpoints.editRecord(layout: layout, recordId: recordId, payload: payload, modId: modId))
    }

    /// Deletes a record.
    /// - Returns: the results of the scripts that ran.
    /// - Throws: ``FMError``.
    @discardableResult
    public func deleteRecord(layout: String, recordId: Int, options: FMScriptOptions = .init()) async throws -> FMScriptResults {
        try await bridge(Endpoints.deleteRecord(layout: layout, recordId: recordId, options: options))
    }

    /// Duplicates a record.
    /// - Returns: the new record's ids.
    /// - Throws: ``FMError``.
    @discardableResult
    public func duplicateRecord(layout: String, recordId: Int, options: FMScriptOptions = .init()) async throws -> FMRecordReference {
        try await bridge(Endpoints.duplicateRecord(layout: layout, recordId: recordId, options: options))
    }
}
