import Foundation

// DataAPI.swift, September 2018 – May 2019 (epochs E1–E9 of LEGACY.md): non-optional result shapes,
// `modID:`, the record-id spellings `recordId:` / `with:` / `id:`, and `fm-db-path` configuration.
//
// Fixed, not reproduced: every completion is called exactly once (the originals returned silently on
// any failure and, for most calls, on FileMaker errors); on failure the non-optional shapes deliver
// `[]`, `[:]`, `""` or `Date(timeIntervalSince1970: 0)` with the code; `modID` is sent; `offset` and
// `limit` reach the server; an empty `getRecord` answer is code `-1008` instead of a crash.
//
// The non-optional shapes that share an arity with a later optional shape are `@_disfavoredOverload`:
// closures that bind with `guard let` pick the optional overload, closures that use the value directly
// pick these.

extension DataAPI {
    // MARK: Session

    /// 2018–2019: `true` when `fm-token` holds a token that can be sent (no space or line break, at most 4 KiB)
    /// and the `Date` in `fm-token-expiry` is in the future.
    public class func isActiveToken() -> Bool {
        LegacyEnvironment.isActiveToken()
    }

    /// 2018 (E1–E4, E6): logs in with base64 `user:pass`; writes `fm-token` and `fm-token-expiry`. On failure `("", 1970, code)`.
    @_disfavoredOverload
    public class func refreshToken(for auth: String, completion: sending @escaping (String, Date, String) -> Void) {
        legacyLogin(auth: auth, era: .dbPath) { token, expiry, code, _ in
            completion(token ?? "", expiry ?? Date(timeIntervalSince1970: 0), code)
        }
    }

    /// 2018–2019 README and E5: `(token, expiry)`. On failure `("", Date(timeIntervalSince1970: 0))`.
    public class func refreshToken(for auth: String, completion: sending @escaping (String, Date) -> Void) {
        legacyLogin(auth: auth, era: .dbPath) { token, expiry, _, _ in
            completion(token ?? "", expiry ?? Date(timeIntervalSince1970: 0))
        }
    }

    // MARK: Create

    /// May 2019 (E8): creates a record; delivers only the code.
    public class func createRecord(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String) -> Void
    ) {
        legacyRecordId(.create(layout: layout, payload: payload), era: .dbPath, token: token) { _, code, _ in
            completion(code)
        }
    }

    /// May 2019 (E9): `(recordId, code)`, with the id read from `recordId` (E9 read `recordID`). `""` on failure.
    @_disfavoredOverload
    public class func createRecord(
        token: String, layout: String, payload: [String: Any], completion: sending @escaping (String, String) -> Void
    ) {
        legacyRecordId(.create(layout: layout, payload: payload), era: .dbPath, token: token) { id, code, _ in
            completion(id ?? "", code)
        }
    }

    // MARK: List and find

    /// 2018 – May 2019 (E1–E6, E8–E9): records with a limit (`_limit` is sent). `[]` on failure.
    @_disfavoredOverload
    public class func getRecords(
        token: String, layout: String, limit: Int, completion: sending @escaping ([[String: Any]], String) -> Void
    ) {
        legacyRecords(.getRecords(layout: layout, offset: nil, limit: limit, extra: []), era: .dbPath, token: token) {
            records, code, _ in completion(records ?? [], code)
        }
    }

    /// May 2019 (E7–E9): records with an offset and a limit (both are sent). `[]` on failure.
    @_disfavoredOverload
    public class func getRecords(
        token: String, layout: String, offset: Int, limit: Int,
        completion: sending @escaping ([[String: Any]], String) -> Void
    ) {
        legacyRecords(.getRecords(layout: layout, offset: offset, limit: limit, extra: []), era: .dbPath, token: token) {
            records, code, _ in completion(records ?? [], code)
        }
    }

    /// 2018 – May 2019 (E1–E9): a find with a `["query": …]` payload. `[]` on failure (`"401"`: no match).
    @_disfavoredOverload
    public class func findRequest(
        token: String, layout: String, payload: [String: Any],
        completion: sending @escaping ([[String: Any]], String) -> Void
    ) {
        legacyRecords(.find(layout: layout, payload: payload), era: .dbPath, token: token) { records, code, _ in
            completion(records ?? [], code)
        }
    }

    // MARK: Get one

    /// September 2018 (E1): one record by id. `[:]` on failure; `-1008` when the answer is empty.
    public class func getRecord(
        token: String, layout: String, recordId: Int, completion: sending @escaping ([String: Any], String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: recordId), era: .dbPath, token: token) { record, code, _ in
            completion(record ?? [:], code)
        }
    }

    /// October 2018 – February 2019 (E3): one record by id. `[:]` on failure.
    public class func getRecord(
        with id: Int, token: String, layout: String, completion: sending @escaping ([String: Any], String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .dbPath, token: token) { record, code, _ in
            completion(record ?? [:], code)
        }
    }

    /// 2018 – May 2019 (E2, E4–E9): one record by id. `[:]` on failure.
    @_disfavoredOverload
    public class func getRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping ([String: Any], String) -> Void
    ) {
        legacyRecord(.getRecord(layout: layout, recordId: id), era: .dbPath, token: token) { record, code, _ in
            completion(record ?? [:], code)
        }
    }

    // MARK: Delete

    /// September 2018 (E1): deletes a record; delivers the code.
    public class func deleteRecord(
        token: String, layout: String, recordId: Int, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: recordId), era: .dbPath, token: token) { code, _ in
            completion(code)
        }
    }

    /// October 2018 – February 2019 (E3): deletes a record; delivers the code.
    public class func deleteRecord(
        with id: Int, token: String, layout: String, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: id), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    /// 2018–2019 (E2, E4–E14, E17–E19): deletes a record; delivers the code.
    public class func deleteRecordWith(
        id: Int, token: String, layout: String, completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.delete(layout: layout, recordId: id), era: .dbPath, token: token) { code, _ in completion(code) }
    }

    // MARK: Edit

    /// September 2018 (E1): edits a record; `modID` is sent (the original ignored it).
    public class func editRecord(
        token: String, layout: String, payload: [String: Any], recordId: Int, modID: Int?,
        completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.edit(layout: layout, recordId: recordId, payload: payload, modId: modID), era: .dbPath, token: token) {
            code, _ in completion(code)
        }
    }

    /// October 2018 – February 2019 (E3): edits a record; `modID` is sent.
    public class func editRecord(
        with id: Int, token: String, layout: String, payload: [String: Any], modID: Int?,
        completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.edit(layout: layout, recordId: id, payload: payload, modId: modID), era: .dbPath, token: token) {
            code, _ in completion(code)
        }
    }

    /// 2018 – June 2019 (E2, E4–E13): edits a record; `modID` is sent.
    public class func editRecordWith(
        id: Int, token: String, layout: String, payload: [String: Any], modID: Int?,
        completion: sending @escaping (String) -> Void
    ) {
        legacyStatus(.edit(layout: layout, recordId: id, payload: payload, modId: modID), era: .dbPath, token: token) {
            code, _ in completion(code)
        }
    }
}
