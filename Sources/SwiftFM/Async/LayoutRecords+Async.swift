import Foundation

// The async typed calls of a layout record type (``FMLayoutRecord``).
extension DataAPI {
    /// Reads a range of records of `T.layout` decoded into `T`, portals filled.
    /// An empty table or an offset past the end returns an empty found set.
    /// - Throws: ``FMError``.
    public func getRecords<T: FMLayoutRecord>(as type: T.Type, offset: Int? = nil, limit: Int? = nil, sort: [FMSort] = [],
                                              options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        try await getRecords(as: type, layout: T.layout, offset: offset, limit: limit, sort: sort, options: options)
    }

    /// Reads one record of `T.layout` decoded into `T`, portals filled.
    /// - Throws: ``FMError`` (`"101"` when the record is missing).
    public func getRecord<T: FMLayoutRecord>(as type: T.Type, recordId: Int,
                                             options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        try await getRecord(as: type, layout: T.layout, recordId: recordId, options: options)
    }

    /// Reads one record of `T.layout` decoded into `T`, by the id `createRecord` gave.
    /// - Throws: ``FMError`` (`"101"` when the record is missing, `-1002` when `recordId` is not a record id).
    public func getRecord<T: FMLayoutRecord>(as type: T.Type, recordId: String,
                                             options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        try await getRecord(as: type, layout: T.layout, recordId: recordId, options: options)
    }

    /// Reads one record of `T.layout` as that record (not a found set), portals filled:
    /// `let one = try await api.record(as: Artists.self, recordId: 1)` then `one.fieldData.name`.
    /// `getRecord(as:recordId:)` gives the found set (with its `dataInfo` and script results).
    /// - Throws: ``FMError`` (`"101"` when the record is missing).
    public func record<T: FMLayoutRecord>(as type: T.Type, recordId: Int,
                                          options: FMReadOptions = .init()) async throws -> FMRecord<T> {
        try Self.onlyRecord(of: await getRecord(as: type, recordId: recordId, options: options))
    }

    /// Reads one record of `T.layout` as that record, by the id `createRecord` gave.
    /// - Throws: ``FMError`` (`"101"` when the record is missing, `-1002` when `recordId` is not a record id).
    public func record<T: FMLayoutRecord>(as type: T.Type, recordId: String,
                                          options: FMReadOptions = .init()) async throws -> FMRecord<T> {
        try Self.onlyRecord(of: await getRecord(as: type, recordId: recordId, options: options))
    }

    /// Performs a find on `T.layout` decoded into `T`, portals filled; no match is an empty found set.
    /// - Throws: ``FMError``.
    public func find<T: FMLayoutRecord>(as type: T.Type, request: FMFindRequest) async throws -> FMTypedFoundSet<T> {
        try await find(as: type, layout: T.layout, request: request)
    }

    /// The pages of `T.layout` (or a found set) decoded into `T`; see ``pages(layout:find:pageSize:sort:options:)``.
    ///
    /// - Parameters:
    ///   - type: the layout record type.
    ///   - find: the find to page through, or `nil` for all records.
    ///   - pageSize: records per page.
    ///   - sort: the sort.
    ///   - options: portals, response layout, `dateformats`, time zone, scripts.
    public func pages<T: FMLayoutRecord>(as type: T.Type, find: FMFindRequest? = nil, pageSize: Int = 100,
                                         sort: [FMSort] = [], options: FMReadOptions = .init()) -> FMPages<FMTypedFoundSet<T>> {
        pages(as: type, layout: T.layout, find: find, pageSize: pageSize, sort: sort, options: options)
    }

    /// Creates a record on `T.layout` from a layout record value; see ``createRecord(_:options:completion:)``.
    /// - Throws: ``FMError`` (`"-1002"` when the value cannot be encoded).
    @discardableResult
    public func createRecord<T: FMLayoutRecord & Encodable>(_ record: T, options: FMWriteOptions = .init()) async throws -> FMRecordReference {
        try await bridge(Endpoints.createRecord(record, options: options))
    }

    /// Edits a record of `T.layout` with the set fields of a layout record value.
    /// - Throws: ``FMError`` (`"306"` when `modId` no longer matches).
    @discardableResult
    public func editRecord<T: FMLayoutRecord & Encodable>(_ record: T, recordId: Int, modId: String? = nil,
                                                          options: FMWriteOptions = .init()) async throws -> FMEditResult {
        try await bridge(Endpoints.editRecord(record, recordId: recordId, modId: modId, options: options))
    }

    /// Edits a record of `T.layout` with the set fields of a layout record value, by the id `createRecord` gave.
    /// - Throws: ``FMError`` (`"306"` when `modId` no longer matches, `-1002` when `recordId` is not a record id).
    @discardableResult
    public func editRecord<T: FMLayoutRecord & Encodable>(_ record: T, recordId: String, modId: String? = nil,
                                                          options: FMWriteOptions = .init()) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .patch, ["layouts", T.layout, "records", recordId])
        return try await editRecord(record, recordId: number, modId: modId, options: options)
    }
}
