import Foundation

// DataAPI.swift, June – August 2019 (epochs E10–E19 of LEGACY.md): optional results `(value?, code)`,
// `modId:`, unlabelled ids (E15–E16), duplicate, globals, `deleteToken`, the instance `createRecord`
// (E11–E18, `DataAPI().createRecord(…)`), and `fm-db-path` configuration.
//
// Fixed, not reproduced: every completion is called exactly once, with nil and a client-side code
// where the originals returned silently; `modId` is sent; `offset`/`limit` reach the server;
// `createRecord` reads `recordId` (E11–E13 read `recordID` and never delivered an id);
// `setGlobalFields(token:layout:payload:)` ignores `layout` as E14–E16 did (globals are per file).

extension DataAPI {
    // MARK: Session

    /// June – August 2019 (E12–E19): `(token?, expiry?, code)`; writes `fm-token` and `fm-token-expiry`.
    public class func refreshToken(for auth: String, completion: sending @escaping (String?, Date?, String) -> Void) {
        legacyLogin(auth: auth, era: .dbPath) { token, expiry, code, _ in completion(token, expiry, code) }
    }

    /// July – August 2019 (E18–E19): logs out; on success clears `fm-token` and writes `0` to `fm-token-expiry`.
    public class func deleteToken(_ token: String, completion: sending @escaping (String) -> Void) {
        legacyLogout(token: token, era: .dbPath) { code, _ in completion(code) }
    }

    // MARK: Create

    /// July – August 2019 (E19): `(recordId?, code)`.
    public class func createRecord(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String?, String) -> Void
    ) {
        legacyRecordId(.create(layout: layout, payload: payload), era: .dbPath, token: token) { id, code, _ in
            completion(id, code)
        }
    }

    /// June – July 2019 (E13–E18), instance method: `DataAPI().createRecord(…)` → `(recordId?, code)`.
    public func createRecord(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String?, String) -> Void
    ) {
        DataAPI.legacyRecordId(.create(layout: layout, payload: payload), era: .dbPath, token: token) { id, code, _ in
            completion(id, code)
        }
    }

    /// June 2019 (E11–E12), instance method: `(recordId, code)`; E11–E12 never called back. `""` on failure.
    @_disfavoredOverload
    public func createRecord(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String, String) -> Void
    ) {
        DataAPI.legacyRecordId(.create(layout: layout, payload: payload), era: .dbPath, token: token) { id, code, _ in
            completion(id ?? "", code)
        }
    }

    // MARK: Duplicate

    /// June – August 2019 (E14, E17–E19): duplicates a record; delivers the code.
    public class func duplicateRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.duplicate(layout: layout, recordId: id), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    /// June 2019 (E15–E16): duplicates a record (unlabelled id); delivers the code.
    public class func duplicateRecordWith(
        _ id: Int, token: String, layout: String, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.duplicate(layout: layout, recordId: id), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    // MARK: List and find

    /// June 2019 (E10–E15): `(records?, code)` with a limit.
    public class func getRecords(
        token: String, layout: String, limit: Int, completion: sending @escaping ([[String: Any]]?, String) -> Void
    ) {
        legacyRecords(.getRecords(layout: layout, offset: nil, limit: limit, extra: []), era: .dbPath, token: token) {
            records, code, _ in completion(records, code)
        }
    }

    /// June – August 2019 (E16–E19): `(records?, code)` with an offset and a limit.
    public class func getRecords(
        token: String, layout: String, offset: Int, limit: Int,
        completion: sending @escaping ([[String: Any]]?, String) -> Void
    ) {
        legacyRecords(.getRecords(layout: layout, offset: offset, limit: limit, extra: []), era: .dbPath, token: token) {
            records, code, _ in completion(records, code)
        }
    }

    /// June – August 2019 (E10–E19): `(records?, code)` of a find; nil and `"401"` when nothing matches.
    public class func findRequest(
        token: String, layout: String, payload: [String: Any],
        completion: sending @escaping ([[String: Any]]?, String) -> Void
    ) {
        legacyRecords(.find(layout: layout, payload: payload), era: .dbPath, token: token) { records, code, _ in
            completion(records, code)
        }
    }

    // MARK: Get one

    /// June – August 2019 (E10–E14, E17–E19): `(record?, code)`; `-1008` when the answer is empty.
    public class func getRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping ([String: Any]?, String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .dbPath, token: token) { record, code, _ in
            completion(record, code)
        }
    }

    /// June 2019 (E15–E16): `(record?, code)`, unlabelled id.
    public class func getRecordWith(
        _ id: Int, token: String, layout: String, completion: sending @escaping ([String: Any]?, String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .dbPath, token: token) { record, code, _ in
            completion(record, code)
        }
    }

    // MARK: Delete

    /// June 2019 (E15–E16): deletes a record (unlabelled id); delivers the code.
    public class func deleteRecordWith(
        _ id: Int, token: String, layout: String, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: id), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    // MARK: Edit

    /// June – August 2019 (E14, E17–E19): edits a record; `modId` is sent (the original ignored it).
    public class func editRecordWith(
        id: Int, token: String, layout: String, payload: [String: Any], modId: Int?,
        completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.edit(layout: layout, recordId: id, payload: payload, modId: modId), era: .dbPath, token: token) {
            code, _ in completion(code)
        }
    }

    /// June 2019 (E15–E16): edits a record (unlabelled id); `modId` is sent.
    public class func editRecordWith(
        _ id: Int, token: String, layout: String, payload: [String: Any], modId: Int?,
        completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.edit(layout: layout, recordId: id, payload: payload, modId: modId), era: .dbPath, token: token) {
            code, _ in completion(code)
        }
    }

    // MARK: Globals

    /// June 2019 (E14–E16): sets global fields (`["globalFields": …]`); `layout` is ignored, as it was.
    public class func setGlobalFields(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.globals(payload: payload), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    /// June – August 2019 (E17–E19): sets global fields (`["globalFields": …]`); delivers the code.
    public class func setGlobalFields(
        token: String, payload: [String: Any], completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.globals(payload: payload), era: .dbPath, token: token) { code, _ in completion(code) }
    }
}
