// Call sites written against the 2018 `DataAPI.swift` (`fm-db-path`, the three-value `refreshToken`, non-optional
// results) compile unchanged and do what they did, against the emulator.
// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation
import Testing

// Call sites in the style of DataAPI.swift 2018 – May 2019 (E1–E9): non-optional completion shapes,
// `modID:`, `recordId:` / `with:` / `id:` spellings, `fm-db-path`, `isActiveToken()` + `refreshToken(for:)`
// as the token guard, and a non-Sendable view controller captured as `self`.

/// Stands in for a 2018 `UIViewController`: a non-Sendable class with mutable state its closures capture.
final class BandsViewController {
    let auth: String
    var token: String?
    var expiry = Date(timeIntervalSince1970: 0)
    var bands: [String] = []
    var lastCode = ""
    let done = DispatchSemaphore(value: 0)

    init(defaults: UserDefaults) {
        auth = defaults.string(forKey: "fm-auth") ?? ""
        token = defaults.string(forKey: "fm-token")
    }

    var payload: [String: Any] = ["query": [["city": "Dallas"]]]

    /// The 2018 README's viewDidLoad: check the token, refresh it if needed, then find.
    func viewDidLoad() {
        switch DataAPI.isActiveToken() {
        case true:
            findBands(token: token!)
        case false:
            DataAPI.refreshToken(for: auth, completion: { newToken, newExpiry in
                self.token = newToken
                self.expiry = newExpiry
                self.findBands(token: newToken)
            })
        }
    }

    func findBands(token: String) {
        DataAPI.findRequest(token: token, layout: "Artists", payload: self.payload, completion: { records, code in
            for record in records {
                guard let fieldData = record["fieldData"] as? [String: Any],
                      let name = fieldData["name"] as? String else { continue }
                self.bands.append(name)
            }
            self.bands.sort()
            self.lastCode = code
            self.done.signal()
        })
    }
}

#if swift(>=6)
// Swift 6 port (PortingFromDataAPISwift.md, "Swift 6 language mode", 1): the completions capture `self` and run
// on the callback queue, so the class must be safe to send there. Its state is touched by one completion at a
// time, and read by the test only after `done` was signalled.
extension BandsViewController: @unchecked Sendable {}
#endif

/// Methods pasted into an extension of `DataAPI` (the README's unqualified calls). `DataAPI`'s legacy
/// functions are class functions, so unqualified calls resolve in a static context.
extension DataAPI {
    #if swift(>=6)
    // Swift 6 port (2): a completion handed on to SwiftFM is `sending` (or `@Sendable`).
    static func firstTwoNames(token: String, completion: sending @escaping ([String]) -> Void) {
        getRecords(token: token, layout: "Artists", limit: 2) { records, code in
            completion(records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String })
        }
    }
    #else
    static func firstTwoNames(token: String, completion: @escaping ([String]) -> Void) {
        getRecords(token: token, layout: "Artists", limit: 2) { records, code in
            completion(records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String })
        }
    }
    #endif
}

@Suite struct Corpus2018Tests {
    @Test func viewControllerRefreshesThenFinds() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            #expect(DataAPI.isActiveToken() == false)
            let vc = BandsViewController(defaults: server.defaults)
            vc.viewDidLoad()
            #expect(vc.done.wait(timeout: .now() + 300) == .success)
            #expect(vc.bands == ["Brian", "Sudie"])
            #expect(vc.lastCode == "0")
            #expect(vc.expiry > Date())
            // refreshToken wrote the keys the way the originals did: a String and a Date.
            #expect(server.defaults.string(forKey: "fm-token") == vc.token)
            #expect(server.defaults.object(forKey: "fm-token-expiry") is Date)
            #expect(DataAPI.isActiveToken())
            // A second view controller now takes the `isActiveToken()` branch with the stored token.
            let second = BandsViewController(defaults: server.defaults)
            second.viewDidLoad()
            #expect(second.done.wait(timeout: .now() + 300) == .success)
            #expect(second.bands == ["Brian", "Sudie"])
            #expect(server.requests("POST", "/sessions").count == 1)
        }
    }

    @Test func refreshTokenThreeValueNonOptional() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            #if swift(>=6)
            // Swift 6 port (3): a completion does not assign the caller's local variables; it hands the values on.
            let (code, tokenText, expiryDate) = wait { done in
                DataAPI.refreshToken(for: LegacyServer.auth, completion: { token, expiry, code in
                    let text: String = token   // String, not String?: the disfavoured 2018 shape
                    done((code, text, expiry))
                })
            } ?? ("", "", Date(timeIntervalSince1970: 0))
            #else
            var tokenText = ""
            var expiryDate = Date(timeIntervalSince1970: 0)
            let code = wait { done in
                DataAPI.refreshToken(for: LegacyServer.auth, completion: { token, expiry, code in
                    tokenText = token          // String, not String?: the disfavoured 2018 shape
                    expiryDate = expiry
                    done(code)
                })
            }
            #endif
            #expect(code == "0")
            #expect(!tokenText.isEmpty)
            #expect(expiryDate > Date())
            // A bad password: the original never called back; now ("", 1970, "212").
            let failed = wait { done in
                DataAPI.refreshToken(for: Data("admin:wrong".utf8).base64EncodedString()) { token, expiry, code in
                    let text: String = token
                    done((text, expiry, code))
                }
            }
            #expect(failed?.0 == "")
            #expect(failed?.1 == Date(timeIntervalSince1970: 0))
            #expect(failed?.2 == "212")
        }
    }

    @Test func recordsAndFindNonOptional() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // getRecords(token:layout:limit:) → ([[String: Any]], String)
            let limited = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", limit: 2, completion: { records, code in
                    var names: [String] = []
                    for record in records { names.append(field(record, "name") ?? "") }
                    done((names, code))
                })
            }
            #expect(limited?.0 == ["Brian", "Geoff"])
            #expect(limited?.1 == "0")
            #expect(server.requests("GET", "/layouts/Artists/records").last?.target.contains("_limit=2") == true)

            // getRecords(token:layout:offset:limit:) → ([[String: Any]], String); offset and limit reach the server.
            let page = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 2, limit: 1) { records, code in
                    let first: [String: Any]? = records.first
                    done((first, code))
                }
            }
            #expect(field(page?.0, "name") == "Geoff")
            let target = server.requests("GET", "/layouts/Artists/records").last?.target ?? ""
            #expect(target.contains("_offset=2") && target.contains("_limit=1"))

            // findRequest → ([[String: Any]], String); no match is [] and "401".
            let none = wait { done in
                DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Nobody"]]]) { records, code in
                    done((records.count, code))
                }
            }
            #expect(none?.0 == 0)
            #expect(none?.1 == "401")

            // Unqualified calls from a static helper in an extension of DataAPI.
            let helper = wait { done in DataAPI.firstTwoNames(token: token, completion: done) }
            #expect(helper == ["Brian", "Geoff"])
        }
    }

    @Test func singleRecordSpellings() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // E1: getRecord(token:layout:recordId:) → ([String: Any], String)
            let e1 = wait { done in
                DataAPI.getRecord(token: token, layout: "Artists", recordId: 1) { record, code in
                    done((field(record, "name"), record["recordId"] as? String, code))
                }
            }
            #expect(e1?.0 == "Brian")
            #expect(e1?.1 == "1")
            #expect(e1?.2 == "0")
            // E3: getRecord(with:token:layout:)
            let e3 = wait { done in
                DataAPI.getRecord(with: 2, token: token, layout: "Artists", completion: { record, code in
                    done((field(record, "name"), code))
                })
            }
            #expect(e3?.0 == "Geoff")
            // E2/E4–E9: getRecordWith(id:token:layout:) with a non-optional body.
            let e2 = wait { done in
                DataAPI.getRecordWith(id: 3, token: token, layout: "Artists") { record, code in
                    let fieldData = record["fieldData"] as? [String: Any]
                    done((fieldData?["name"] as? String, code))
                }
            }
            #expect(e2?.0 == "Sudie")
            // A missing record: the original never called back; now [:] and "101".
            let missing = wait { done in
                DataAPI.getRecord(token: token, layout: "Artists", recordId: 999) { record, code in done((record.isEmpty, code)) }
            }
            #expect(missing?.0 == true)
            #expect(missing?.1 == "101")
        }
    }

    @Test func createEditDeleteNonOptional() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // E8: createRecord → (code)
            let created = wait { done in
                DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Cure For Paranoia"]]) { code in
                    done(code)
                }
            }
            #expect(created == "0")
            // E9: createRecord → (recordId, code), read from `recordId` (E9 read `recordID` and never had one).
            #if swift(>=6)
            // Swift 6 port (3).
            let (code9, newId) = wait { done in
                DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Pinkish Black"]], completion: { recordId, code in
                    let id: String = recordId
                    done((code, id))
                })
            } ?? ("", "")
            #else
            var newId = ""
            let code9 = wait { done in
                DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Pinkish Black"]], completion: { recordId, code in
                    newId = recordId
                    done(code)
                })
            }
            #endif
            #expect(code9 == "0")
            #expect(newId == "5")
            let id = try #require(Int(newId))

            // E1: editRecord(token:layout:payload:recordId:modID:) — modID is sent.
            let edit1 = wait { done in
                DataAPI.editRecord(token: token, layout: "Artists", payload: ["fieldData": ["city": "Denton"]], recordId: id, modID: 0) { code in done(code) }
            }
            #expect(edit1 == "0")
            #expect(jsonBody(server.requests("PATCH", "/records/\(id)").last)?["modId"] as? String == "0")
            // E3: editRecord(with:…modID:) with a stale modID is refused by the server (306), proving it is sent.
            let stale = wait { done in
                DataAPI.editRecord(with: id, token: token, layout: "Artists", payload: ["fieldData": ["city": "Austin"]], modID: 0) { code in done(code) }
            }
            #expect(stale == "306")
            // E2/E4–E13: editRecordWith(id:…modID:) with nil: no modId in the body.
            let edit2 = wait { done in
                DataAPI.editRecordWith(id: id, token: token, layout: "Artists", payload: ["fieldData": ["city": "Austin"]], modID: nil, completion: { code in done(code) })
            }
            #expect(edit2 == "0")
            #expect(jsonBody(server.requests("PATCH", "/records/\(id)").last)?["modId"] == nil)
            let check = wait { done in
                DataAPI.getRecordWith(id: id, token: token, layout: "Artists") { record, code in done(field(record, "city")) }
            }
            #expect(check == "Austin")

            // Deletes: E1 recordId:, E3 with:, E2 id:.
            let d1 = wait { done in DataAPI.deleteRecord(token: token, layout: "Artists", recordId: id) { code in done(code) } }
            #expect(d1 == "0")
            let d3 = wait { done in DataAPI.deleteRecord(with: 4, token: token, layout: "Artists") { code in done(code) } }
            #expect(d3 == "0")
            let d2 = wait { done in DataAPI.deleteRecordWith(id: 3, token: token, layout: "Artists", completion: { code in done(code) }) }
            #expect(d2 == "0")
            let again = wait { done in DataAPI.deleteRecordWith(id: 3, token: token, layout: "Artists") { code in done(code) } }
            #expect(again == "101")
            let remaining = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 10) { records, _ in
                    let list: [[String: Any]] = records
                    done(names(list))
                }
            }
            #expect(remaining == ["Brian", "Geoff"])
        }
    }

    @Test func twoValueRefreshFromTheREADME() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            // The 2018–2019 README's (token, expiry) shape, with a chained call inside the completion.
            let result = wait { done in
                DataAPI.refreshToken(for: LegacyServer.auth, completion: { newToken, newExpiry in
                    DataAPI.getRecords(token: newToken, layout: "Artists", limit: 1) { records, code in
                        done((newExpiry > Date(), names(records), code))
                    }
                })
            }
            #expect(result?.0 == true)
            #expect(result?.1 == ["Brian"])
            #expect(result?.2 == "0")
        }
    }
}
