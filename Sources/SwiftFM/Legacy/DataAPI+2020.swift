import Foundation

// DataAPI.swift, August – December 2020 ("v19", epochs E20–E21 of LEGACY.md): `(value?, code, message)`
// shapes, `validateSession(token:)`, `refreshToken(auth:)`, the `With`-less names of E21, and
// `fm-host` + `fm-db` configuration (a bare host means https; `http://host:port` is honoured).
//
// Fixed, not reproduced: every completion is called exactly once (with a client-side code and its
// message where the originals returned silently); names with spaces or slashes are percent-encoded;
// `modId` is sent; `offset`/`limit` reach the server; an empty `getRecord` answer is `-1008`;
// `refreshToken(auth:)` also writes `fm-token-expiry`, so `isActiveToken()` callers can be mixed in.

extension DataAPI {
    // MARK: Session

    /// 2020 (E20–E21): `(isValid, message)` from `GET /validateSession`.
    public class func validateSession(token: String, completion: sending @escaping (Bool, String) -> Void) {
        legacySend(.validate, era: .hostAndDatabase, token: token) { outcome in
            completion(outcome.isSuccess, outcome.message)
        }
    }

    /// 2020 (E20–E21): `(token?, code, message)`; writes `fm-token` (and `fm-token-expiry`).
    public class func refreshToken(auth: String, completion: sending @escaping (String?, String, String) -> Void) {
        legacyLogin(auth: auth, era: .hostAndDatabase) { token, _, code, message in completion(token, code, message) }
    }

    /// 2020 (E20–E21): `(code, message)`; on success clears `fm-token` (and writes `0` to `fm-token-expiry`).
    public class func deleteToken(_ token: String, completion: sending @escaping (String, String) -> Void) {
        legacyLogout(token: token, era: .hostAndDatabase, completion: completion)
    }

    // MARK: Create and duplicate

    /// 2020 (E20–E21): `(recordId?, code, message)`.
    public class func createRecord(
        token: String, layout: String, payload: [String: Any],
        completion: sending @escaping (String?, String, String) -> Void
    ) {
        legacyRecordId(.create(layout: layout, payload: payload), era: .hostAndDatabase, token: token, completion: completion)
    }

    /// August 2020 (E20): duplicates a record; `(code, message)`.
    public class func duplicateRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(.duplicate(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    /// 2020 (E21): duplicates a record; `(code, message)`.
    public class func duplicateRecord(
        id: Int, token: String, layout: String, completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(.duplicate(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    // MARK: List and find

    /// 2020 (E20–E21): `(records?, code, message)` with an offset and a limit.
    public class func getRecords(
        token: String, layout: String, offset: Int, limit: Int,
        completion: sending @escaping ([[String: Any]]?, String, String) -> Void
    ) {
        legacyRecords(
            .getRecords(layout: layout, offset: offset, limit: limit, extra: []), era: .hostAndDatabase, token: token,
            completion: completion)
    }

    /// 2020 (E20–E21): `(records?, code, message)` of a find; nil and `"401"` when nothing matches.
    public class func findRequest(
        token: String, layout: String, payload: [String: Any],
        completion: sending @escaping ([[String: Any]]?, String, String) -> Void
    ) {
        legacyRecords(.find(layout: layout, payload: payload), era: .hostAndDatabase, token: token, completion: completion)
    }

    // MARK: Get one

    /// August 2020 (E20): `(record?, code, message)`; `-1008` when the answer is empty.
    public class func getRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping ([String: Any]?, String, String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    /// 2020 (E21): `(record?, code, message)`; `-1008` when the answer is empty.
    public class func getRecord(
        id: Int, token: String, layout: String, completion: sending @escaping ([String: Any]?, String, String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    // MARK: Delete

    /// August 2020 (E20): deletes a record; `(code, message)`.
    public class func deleteRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    /// 2020 (E21): deletes a record; `(code, message)`.
    public class func deleteRecord(
        id: Int, token: String, layout: String, completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: id), era: .hostAndDatabase, token: token, completion: completion)
    }

    // MARK: Edit

    /// August 2020 (E20): edits a record; `modId` is sent; `(code, message)`.
    public class func editRecordWith(
        id: Int, token: String, layout: String, payload: [String: Any], modId: Int?,
        completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(
            .edit(layout: layout, recordId: id, payload: payload, modId: modId), era: .hostAndDatabase, token: token,
            completion: completion)
    }

    /// 2020 (E21): edits a record; `modId` is sent; `(code, message)`.
    public class func editRecord(
        id: Int, token: String, layout: String, payload: [String: Any], modId: Int?,
        completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(
            .edit(layout: layout, recordId: id, payload: payload, modId: modId), era: .hostAndDatabase, token: token,
            completion: completion)
    }

    // MARK: Globals

    /// 2020 (E20–E21): sets global fields (`["globalFields": …]`); `(code, message)`.
    public class func setGlobalFields(
        token: String, payload: [String: Any], completion: sending @escaping (String, String) -> Void
    ) {
        legacyStatus(.globals(payload: payload), era: .hostAndDatabase, token: token, completion: completion)
    }
}
