import Foundation

extension DataAPI {
    /// Creates a record (`POST …/layouts/{layout}/records`).
    ///
    /// Payload values must be JSON values (strings, numbers, arrays, dictionaries). `nil`/`NSNull`
    /// (which FileMaker rejects with 1708; send `""` to clear a field), NaN, infinities and other types
    /// complete with `-1002` without sending anything.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - fieldData: field name → value (`name(n)` addresses repetition n).
    ///   - portalData: portal name → rows of related fields (`TO::field`) to create.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the new record's ids and script results, or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createRecord(layout: String, fieldData: [String: Any], portalData: [String: [[String: Any]]]? = nil,
                             options: FMWriteOptions = .init(),
                             completion: sending @escaping (FMRecordReference?, String) -> Void) -> FMRequest {
        perform(Endpoints.createRecord(layout: layout, fieldData: fieldData, portalData: portalData, options: options)) {
            completion($0.value, $0.code)
        }
    }

    /// Creates a record whose `fieldData` is encoded from an `Encodable` value (a struct of field names).
    ///
    /// `nil` properties are left out (FileMaker rejects `null`); send `""` to leave a field empty. Dates
    /// should be strings in the `dateformats` format (the default `JSONEncoder` date strategy is not one).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - fields: the fields, encoded with `JSONEncoder`; must encode as a JSON object.
    ///   - portalData: portal name → rows of related fields to create.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the new record's ids or `nil`, and the code (`"-1002"` when `fields` cannot be encoded).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createRecord<F: Encodable>(layout: String, fields: F, portalData: [String: [[String: Any]]]? = nil,
                                           options: FMWriteOptions = .init(),
                                           completion: sending @escaping (FMRecordReference?, String) -> Void) -> FMRequest {
        perform(Endpoints.createRecord(layout: layout, fields: fields, portalData: portalData, options: options)) {
            completion($0.value, $0.code)
        }
    }

    /// Creates a record from a raw body as old callers build it (`["fieldData": …]`), sent as given.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - payload: the whole request body.
    ///   - completion: the new record's ids or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createRecord(layout: String, payload: [String: Any],
                             completion: sending @escaping (FMRecordReference?, String) -> Void) -> FMRequest {
        perform(Endpoints.createRecord(layout: layout, payload: payload)) { completion($0.value, $0.code) }
    }

    /// Reads one record (`GET …/layouts/{layout}/records/{recordId}`).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - options: portals and their windows, response layout, `dateformats`, scripts.
    ///   - completion: a found set holding the record, or `nil`, and the code (`"101"` when missing).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecord(layout: String, recordId: Int, options: FMReadOptions = .init(),
                          completion: sending @escaping (FMFoundSet?, String) -> Void) -> FMRequest {
        performRead(Endpoints.getRecord(layout: layout, recordId: recordId, options: options), completion: completion)
    }

    /// Reads one record decoded into `T` (its `fieldData`) with the FileMaker rules of ``FMRecord`` (empty fields,
    /// numbers as text, dates in `options.timeZone` or UTC, repetitions).
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of the record's `fieldData`.
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - options: portals, response layout, `dateformats`, scripts.
    ///   - completion: the typed found set or `nil`, and the code (`"-1007"` when `T` does not match).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecord<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, recordId: Int, options: FMReadOptions = .init(),
                                        completion: sending @escaping (FMTypedFoundSet<T>?, String) -> Void) -> FMRequest {
        performRead(Endpoints.getRecord(as: type, layout: layout, recordId: recordId, options: options), completion: completion)
    }

    /// Reads a range of records (`GET …/layouts/{layout}/records`).
    ///
    /// An offset past the end (FileMaker's `"401"`) or an empty table (FileMaker Server's `"101"`) completes
    /// with an **empty** found set (``FMFoundSet/empty``, not `nil`) and that code, as a find that matches nothing.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - offset: the first record, 1-based (FileMaker's default 1).
    ///   - limit: how many records (FileMaker's default 100).
    ///   - sort: the sort criteria, in order.
    ///   - options: portals and their windows, response layout, `dateformats`, scripts.
    ///   - completion: the found set or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecords(layout: String, offset: Int? = nil, limit: Int? = nil, sort: [FMSort] = [],
                           options: FMReadOptions = .init(),
                           completion: sending @escaping (FMFoundSet?, String) -> Void) -> FMRequest {
        performRead(Endpoints.getRecords(layout: layout, offset: offset, limit: limit, sort: sort, options: options), completion: completion)
    }

    /// Reads a range of records decoded into `T` with the FileMaker rules of ``FMRecord`` (empty fields,
    /// numbers as text, dates in `options.timeZone` or UTC, repetitions).
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - layout: the layout name.
    ///   - offset: the first record, 1-based.
    ///   - limit: how many records.
    ///   - sort: the sort criteria.
    ///   - options: portals, response layout, `dateformats`, scripts.
    ///   - completion: the typed found set (empty for `"401"`: past the end) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecords<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, offset: Int? = nil, limit: Int? = nil,
                                         sort: [FMSort] = [], options: FMReadOptions = .init(),
                                         completion: sending @escaping (FMTypedFoundSet<T>?, String) -> Void) -> FMRequest {
        performRead(Endpoints.getRecords(as: type, layout: layout, offset: offset, limit: limit, sort: sort, options: options),
                    completion: completion)
    }

    /// Edits a record (`PATCH …/layouts/{layout}/records/{recordId}`).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - fieldData: the fields to change (others stay as they are).
    ///   - portalData: portal name → rows; rows with `recordId` (and optional `modId`) edit that related
    ///     record, rows without create one.
    ///   - modId: when given, sent to FileMaker, which answers `"306"` if the record changed since.
    ///   - deleteRelated: related records to delete, each `"<portal or TO>.<recordId>"`.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the new `modId`, created portal rows and script results, or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord(layout: String, recordId: Int, fieldData: [String: Any],
                           portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                           deleteRelated: [String] = [], options: FMWriteOptions = .init(),
                           completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        let endpoint = Endpoints.editRecord(layout: layout, recordId: recordId, fieldData: fieldData, portalData: portalData,
                                            modId: modId, deleteRelated: deleteRelated, options: options)
        return perform(endpoint) { completion($0.value, $0.code) }
    }

    /// Edits a record with `fieldData` encoded from an `Encodable` value; see
    /// ``editRecord(layout:recordId:fieldData:portalData:modId:deleteRelated:options:completion:)-(_,Int,_,_,_,_,_,_)``.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - fields: the fields to change, encoded with `JSONEncoder`; `nil` properties are left out.
    ///   - portalData: portal rows to edit or create.
    ///   - modId: when given, sent so FileMaker answers `"306"` if the record changed since.
    ///   - deleteRelated: related records to delete, each `"<portal or TO>.<recordId>"`.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord<F: Encodable>(layout: String, recordId: Int, fields: F,
                                         portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                                         deleteRelated: [String] = [], options: FMWriteOptions = .init(),
                                         completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        let endpoint = Endpoints.editRecord(layout: layout, recordId: recordId, fields: fields, portalData: portalData,
                                            modId: modId, deleteRelated: deleteRelated, options: options)
        return perform(endpoint) { completion($0.value, $0.code) }
    }

    /// Edits a record with a raw body as old callers build it; `modId`, when given, is added to the body
    /// as a string (so FileMaker checks it; the original DataAPI.swift ignored it).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - payload: the whole request body (`["fieldData": …]`).
    ///   - modId: the modification id to check.
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord(layout: String, recordId: Int, payload: [String: Any], modId: Int? = nil,
                           completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        perform(Endpoints.editRecord(layout: layout, recordId: recordId, payload: payload, modId: modId)) {
            completion($0.value, $0.code)
        }
    }

    /// Deletes a record (`DELETE …/layouts/{layout}/records/{recordId}`; script keys in the query string).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - options: scripts to run.
    ///   - completion: the script results (``FMScriptResults/none`` when none ran) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteRecord(layout: String, recordId: Int, options: FMScriptOptions = .init(),
                             completion: sending @escaping (FMScriptResults?, String) -> Void) -> FMRequest {
        perform(Endpoints.deleteRecord(layout: layout, recordId: recordId, options: options)) { completion($0.value, $0.code) }
    }

    /// Duplicates a record (`POST …/layouts/{layout}/records/{recordId}`).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record to duplicate.
    ///   - options: scripts to run.
    ///   - completion: the new record's ids or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func duplicateRecord(layout: String, recordId: Int, options: FMScriptOptions = .init(),
                                completion: sending @escaping (FMRecordReference?, String) -> Void) -> FMRequest {
        perform(Endpoints.duplicateRecord(layout: layout, recordId: recordId, options: options)) { completion($0.value, $0.code) }
    }
}
