// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation

// Compile-only: closure bodies of every style for each pair of overloads that share an arity and differ
// only in optionality (LEGACY.md §3.2). Each line must resolve without annotations; the expected
// overload is noted. Nothing here runs; the executed corpus is in the Corpus*Tests files.

final class ResolutionSamples {
    var records: [[String: Any]] = []
    var maybeRecords: [[String: Any]]?
    var record: [String: Any] = [:]
    var name = ""
    var maybeName: String?
    var expiry = Date()

    func samples(token: String, payload: [String: Any]) {
        // refreshToken(for:): (String?, Date?, String) vs (String, Date, String)ᵈ
        DataAPI.refreshToken(for: "auth") { token, expiry, code in print(token as Any, expiry as Any, code) }   // optional
        DataAPI.refreshToken(for: "auth") { token, expiry, code in guard let token = token else { return }; self.name = token }  // optional
        DataAPI.refreshToken(for: "auth") { token, expiry, code in self.name = token; self.expiry = expiry }     // non-optional
        DataAPI.refreshToken(for: "auth") { _, _, _ in }                                                        // optional
        DataAPI.refreshToken(for: "auth", completion: { (token: String, expiry: Date, code: String) in })       // non-optional, annotated

        // createRecord: (String?, String) vs (String, String)ᵈ, class and instance
        DataAPI.createRecord(token: token, layout: "L", payload: payload) { recordId, code in print(recordId as Any) }  // optional
        DataAPI.createRecord(token: token, layout: "L", payload: payload) { recordId, code in self.name = recordId }     // non-optional
        DataAPI.createRecord(token: token, layout: "L", payload: payload) { recordId, code in self.maybeName = recordId } // optional
        DataAPI().createRecord(token: token, layout: "L", payload: payload) { recordId, _ in guard let id = recordId else { return }; self.name = id }
        DataAPI().createRecord(token: token, layout: "L", payload: payload) { recordId, _ in self.name = recordId }
        DataAPI().createRecord(token: token, layout: "L", payload: payload) { _, _ in }

        // getRecords(limit:) and getRecords(offset:limit:): ([[String: Any]]?, String) vs ([[String: Any]], String)ᵈ
        DataAPI.getRecords(token: token, layout: "L", limit: 20) { records, code in guard let records = records else { return }; self.records = records }
        DataAPI.getRecords(token: token, layout: "L", limit: 20) { records, code in for record in records { self.record = record } }
        DataAPI.getRecords(token: token, layout: "L", limit: 20) { records, code in self.records = records }
        DataAPI.getRecords(token: token, layout: "L", limit: 20) { records, code in self.maybeRecords = records }
        DataAPI.getRecords(token: token, layout: "L", limit: 20) { records, code in print(records as Any, code) }
        DataAPI.getRecords(token: token, layout: "L", offset: 1, limit: 20) { records, code in if let records = records { self.records = records } }
        DataAPI.getRecords(token: token, layout: "L", offset: 1, limit: 20) { records, code in self.records = records.filter { $0["recordId"] != nil } }
        DataAPI.getRecords(token: token, layout: "L", offset: 1, limit: 20) { _, code in self.name = code }
        DataAPI.getRecords(token: token, layout: "L", offset: 1, limit: 20, completion: { records, code, message in self.maybeRecords = records })

        // findRequest: ([[String: Any]]?, String) vs ([[String: Any]], String)ᵈ, and the 2020 triple
        DataAPI.findRequest(token: token, layout: "L", payload: payload) { records, code in guard let records = records else { return }; self.records = records }
        DataAPI.findRequest(token: token, layout: "L", payload: payload) { records, code in self.records = records.sorted { _, _ in true } }
        DataAPI.findRequest(token: token, layout: "L", payload: payload) { records, _ in self.name = "\(records?.count ?? 0)" }
        DataAPI.findRequest(token: token, layout: "L", payload: payload) { records, code, message in self.maybeRecords = records }

        // getRecordWith(id:): ([String: Any]?, String) vs ([String: Any], String)ᵈ, and the 2020 triple
        DataAPI.getRecordWith(id: 1, token: token, layout: "L") { record, code in guard let record = record else { return }; self.record = record }
        DataAPI.getRecordWith(id: 1, token: token, layout: "L") { record, code in self.name = record["recordId"] as? String ?? "" }
        DataAPI.getRecordWith(id: 1, token: token, layout: "L") { record, code in self.record = record }
        DataAPI.getRecordWith(id: 1, token: token, layout: "L") { _, _ in }
        DataAPI.getRecordWith(id: 1, token: token, layout: "L") { record, code, message in self.record = record ?? [:] }
    }
}

#if swift(>=6)
// Swift 6 port (PortingFromDataAPISwift.md, "Swift 6 language mode", 1): the completions capture `self` and run
// on the callback queue, so the class must be safe to send there (compile-only here: nothing runs).
extension ResolutionSamples: @unchecked Sendable {}
#endif
