import Foundation

// One record id from create to edit: `createRecord` gives ``FMRecordReference/recordId`` as a `String`
// (FileMaker sends it so), and every call that names a record also takes that `String`, beside the `Int`
// overloads (an integer literal still picks those). Text that is not a record id (digits, a positive
// integer) completes with `-1002` without sending anything.

extension DataAPI {
    /// FileMaker's record id from its text (`"42"`), or the `-1002` error for text that is not one.
    static func recordNumber(_ recordId: String) -> Result<Int, FMError> {
        guard !recordId.isEmpty, recordId.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let number = Int(recordId), number > 0 else {
            return .failure(.invalidArgument("recordId is not a record id: a positive integer in digits, as createRecord gives it"))
        }
        return .success(number)
    }

    /// Runs `call` with the record id as an integer, or completes `completion` with `-1002` (on the callback
    /// queue, with ``FMError/current`` set, as every failure) without sending anything; the call refused is
    /// logged once, at error, named by `segments` (its path: `layouts`, the layout, `records`, the id, …).
    private func withRecordNumber<V>(_ recordId: String, _ method: Endpoint<V>.Method, _ segments: [String],
                                     completion: sending @escaping (V?, String) -> Void,
                                     _ call: (Int, sending @escaping (V?, String) -> Void) -> FMRequest) -> FMRequest {
        switch Self.recordNumber(recordId) {
        case .success(let number): return call(number, completion)
        case .failure(let error): return perform(Endpoints.failing(method, error, segments: segments)) { completion($0.value, $0.code) }
        }
    }

    /// The record id as an integer, for an `async` call; text that is not one is thrown as `-1002` after going
    /// through the pipeline as a call refused before sending, like the callback twin's (logged once, at error,
    /// named by `segments`; measured and traced).
    func recordNumber(_ recordId: String, _ method: Endpoint<Bool>.Method, _ segments: [String]) async throws -> Int {
        switch Self.recordNumber(recordId) {
        case .success(let number):
            return number
        case .failure(let error):
            _ = try await bridge(Endpoints.failing(method, error, segments: segments))
            throw error   // not reached: a failing endpoint always fails
        }
    }

    // MARK: callbacks

    /// Reads one record by the id `createRecord` gave (the `Int` overload takes the same id as a number).
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text (``FMRecordReference/recordId``); `-1002` when it is not one.
    ///   - options: portals and their windows, response layout, `dateformats`, scripts.
    ///   - completion: a found set holding the record, or `nil`, and the code (`"101"` when missing).
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecord(layout: String, recordId: String, options: FMReadOptions = .init(),
                          completion: sending @escaping (FMFoundSet?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .get, ["layouts", layout, "records", recordId], completion: completion) {
            getRecord(layout: layout, recordId: $0, options: options, completion: $1)
        }
    }

    /// Reads one record decoded into `T`, by the id `createRecord` gave.
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of the record's `fieldData`.
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - options: portals, response layout, `dateformats`, scripts.
    ///   - completion: the typed found set or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func getRecord<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, recordId: String, options: FMReadOptions = .init(),
                                                          completion: sending @escaping (FMTypedFoundSet<T>?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .get, ["layouts", layout, "records", recordId], completion: completion) {
            getRecord(as: type, layout: layout, recordId: $0, options: options, completion: $1)
        }
    }

    /// Edits a record by the id `createRecord` gave:
    ///
    /// ```swift
    /// api.createRecord(layout: "Artists", fieldData: ["name": "Nina"]) { ref, code in
    ///     guard let ref else { return }
    ///     api.editRecord(layout: "Artists", recordId: ref.recordId, fieldData: ["city": "Paris"], modId: ref.modId) { result, code in … }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text (``FMRecordReference/recordId``); `-1002` when it is not one.
    ///   - fieldData: the fields to change.
    ///   - portalData: portal name → rows to edit or create.
    ///   - modId: when given, FileMaker answers `"306"` if the record changed since.
    ///   - deleteRelated: related records to delete, each `"<portal or TO>.<recordId>"`.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord(layout: String, recordId: String, fieldData: [String: Any],
                           portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                           deleteRelated: [String] = [], options: FMWriteOptions = .init(),
                           completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .patch, ["layouts", layout, "records", recordId], completion: completion) {
            editRecord(layout: layout, recordId: $0, fieldData: fieldData, portalData: portalData, modId: modId,
                       deleteRelated: deleteRelated, options: options, completion: $1)
        }
    }

    /// Edits a record, by the id `createRecord` gave, with `fieldData` encoded from an `Encodable` value.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - fields: the fields to change, encoded with `JSONEncoder`.
    ///   - portalData: portal rows to edit or create.
    ///   - modId: when given, FileMaker answers `"306"` if the record changed since.
    ///   - deleteRelated: related records to delete.
    ///   - options: scripts, `dateformats`, entry/prohibit modes.
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord<F: Encodable>(layout: String, recordId: String, fields: F,
                                         portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                                         deleteRelated: [String] = [], options: FMWriteOptions = .init(),
                                         completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .patch, ["layouts", layout, "records", recordId], completion: completion) {
            editRecord(layout: layout, recordId: $0, fields: fields, portalData: portalData, modId: modId,
                       deleteRelated: deleteRelated, options: options, completion: $1)
        }
    }

    /// Edits a record, by the id `createRecord` gave, with a raw body.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - payload: the whole request body (`["fieldData": …]`).
    ///   - modId: the modification id to check.
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func editRecord(layout: String, recordId: String, payload: [String: Any], modId: Int? = nil,
                           completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .patch, ["layouts", layout, "records", recordId], completion: completion) {
            editRecord(layout: layout, recordId: $0, payload: payload, modId: modId, completion: $1)
        }
    }

    /// Deletes a record by the id `createRecord` gave.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - options: scripts to run.
    ///   - completion: the script results or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteRecord(layout: String, recordId: String, options: FMScriptOptions = .init(),
                             completion: sending @escaping (FMScriptResults?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .delete, ["layouts", layout, "records", recordId], completion: completion) {
            deleteRecord(layout: layout, recordId: $0, options: options, completion: $1)
        }
    }

    /// Duplicates a record by the id `createRecord` gave.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - options: scripts to run.
    ///   - completion: the new record's ids or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func duplicateRecord(layout: String, recordId: String, options: FMScriptOptions = .init(),
                                completion: sending @escaping (FMRecordReference?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .post, ["layouts", layout, "records", recordId], completion: completion) {
            duplicateRecord(layout: layout, recordId: $0, options: options, completion: $1)
        }
    }

    /// Uploads a file into a container field of the record `createRecord` gave.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - field: the container field name.
    ///   - repetition: the repetition, 1-based.
    ///   - fileURL: the local file to upload.
    ///   - fileName: the name FileMaker stores (default: the URL's last path component).
    ///   - mimeType: the part's `Content-Type` (default: inferred).
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func uploadContainer(layout: String, recordId: String, field: String, repetition: Int = 1, fileURL: URL,
                                fileName: String? = nil, mimeType: String? = nil,
                                completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .post, ["layouts", layout, "records", recordId, "containers", field, String(repetition)],
                         completion: completion) {
            uploadContainer(layout: layout, recordId: $0, field: field, repetition: repetition, fileURL: fileURL,
                            fileName: fileName, mimeType: mimeType, completion: $1)
        }
    }

    /// Uploads bytes into a container field of the record `createRecord` gave.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id as text; `-1002` when it is not one.
    ///   - field: the container field name.
    ///   - repetition: the repetition, 1-based.
    ///   - data: the file's bytes.
    ///   - fileName: the name FileMaker stores.
    ///   - mimeType: the part's `Content-Type` (default: inferred).
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func uploadContainer(layout: String, recordId: String, field: String, repetition: Int = 1, data: Data,
                                fileName: String, mimeType: String? = nil,
                                completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        withRecordNumber(recordId, .post, ["layouts", layout, "records", recordId, "containers", field, String(repetition)],
                         completion: completion) {
            uploadContainer(layout: layout, recordId: $0, field: field, repetition: repetition, data: data,
                            fileName: fileName, mimeType: mimeType, completion: $1)
        }
    }

    // MARK: async

    /// Reads one record by the id `createRecord` gave.
    /// - Throws: ``FMError`` (`"101"` when missing, `-1002` when `recordId` is not a record id).
    public func getRecord(layout: String, recordId: String, options: FMReadOptions = .init()) async throws -> FMFoundSet {
        let number = try await recordNumber(recordId, .get, ["layouts", layout, "records", recordId])
        return try await getRecord(layout: layout, recordId: number, options: options)
    }

    /// Reads one record decoded into `T`, by the id `createRecord` gave.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    public func getRecord<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, recordId: String,
                                                          options: FMReadOptions = .init()) async throws -> FMTypedFoundSet<T> {
        let number = try await recordNumber(recordId, .get, ["layouts", layout, "records", recordId])
        return try await getRecord(as: type, layout: layout, recordId: number, options: options)
    }

    /// Edits a record by the id `createRecord` gave:
    ///
    /// ```swift
    /// let ref = try await api.createRecord(layout: "Artists", fieldData: ["name": "Nina"])
    /// try await api.editRecord(layout: "Artists", recordId: ref.recordId, fieldData: ["city": "Paris"])
    /// ```
    /// - Throws: ``FMError`` (`"306"` when `modId` no longer matches, `-1002` when `recordId` is not a record id).
    @discardableResult
    public func editRecord(layout: String, recordId: String, fieldData: [String: Any],
                           portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                           deleteRelated: [String] = [], options: FMWriteOptions = .init()) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .patch, ["layouts", layout, "records", recordId])
        return try await editRecord(layout: layout, recordId: number, fieldData: fieldData, portalData: portalData,
                             modId: modId, deleteRelated: deleteRelated, options: options)
    }

    /// Edits a record, by the id `createRecord` gave, with `fieldData` encoded from an `Encodable` value.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    @discardableResult
    public func editRecord<F: Encodable>(layout: String, recordId: String, fields: F,
                                         portalData: [String: [[String: Any]]]? = nil, modId: String? = nil,
                                         deleteRelated: [String] = [], options: FMWriteOptions = .init()) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .patch, ["layouts", layout, "records", recordId])
        return try await editRecord(layout: layout, recordId: number, fields: fields, portalData: portalData,
                             modId: modId, deleteRelated: deleteRelated, options: options)
    }

    /// Edits a record, by the id `createRecord` gave, with a raw body.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    @discardableResult
    public func editRecord(layout: String, recordId: String, payload: [String: Any], modId: Int? = nil) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .patch, ["layouts", layout, "records", recordId])
        return try await editRecord(layout: layout, recordId: number, payload: payload, modId: modId)
    }

    /// Deletes a record by the id `createRecord` gave.
    /// - Returns: the results of the scripts that ran.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    @discardableResult
    public func deleteRecord(layout: String, recordId: String, options: FMScriptOptions = .init()) async throws -> FMScriptResults {
        let number = try await recordNumber(recordId, .delete, ["layouts", layout, "records", recordId])
        return try await deleteRecord(layout: layout, recordId: number, options: options)
    }

    /// Duplicates a record by the id `createRecord` gave.
    /// - Returns: the new record's ids.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    @discardableResult
    public func duplicateRecord(layout: String, recordId: String, options: FMScriptOptions = .init()) async throws -> FMRecordReference {
        let number = try await recordNumber(recordId, .post, ["layouts", layout, "records", recordId])
        return try await duplicateRecord(layout: layout, recordId: number, options: options)
    }

    /// Uploads a local file into a container field of the record `createRecord` gave.
    /// - Throws: ``FMError`` (`-1009` for an unreadable file, `-1002` when `recordId` is not a record id).
    @discardableResult
    public func uploadContainer(layout: String, recordId: String, field: String, repetition: Int = 1, fileURL: URL,
                                fileName: String? = nil, mimeType: String? = nil) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .post, ["layouts", layout, "records", recordId, "containers", field, String(repetition)])
        return try await uploadContainer(layout: layout, recordId: number, field: field, repetition: repetition,
                                  fileURL: fileURL, fileName: fileName, mimeType: mimeType)
    }

    /// Uploads bytes into a container field of the record `createRecord` gave.
    /// - Throws: ``FMError`` (`-1002` when `recordId` is not a record id).
    @discardableResult
    public func uploadContainer(layout: String, recordId: String, field: String, repetition: Int = 1, data: Data,
                                fileName: String, mimeType: String? = nil) async throws -> FMEditResult {
        let number = try await recordNumber(recordId, .post, ["layouts", layout, "records", recordId, "containers", field, String(repetition)])
        return try await uploadContainer(layout: layout, recordId: number, field: field, repetition: repetition,
                                  data: data, fileName: fileName, mimeType: mimeType)
    }
}
