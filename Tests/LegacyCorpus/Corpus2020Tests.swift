// Call sites written against the 2020 `DataAPI.swift` (`fm-host` + `fm-db`, session validation, messages in the
// completions) compile unchanged and do what they did, against the emulator.
// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation
import Testing

// Call sites in the style of DataAPI.swift 2020 ("v19", E20–E21) and its README: `fm-host` + `fm-db`,
// qualified `DataAPI.validateSession` / `refreshToken(auth:)` / `deleteToken` from app-delegate style
// code, trailing closures with `(value?, code, message)` bodies, the E20 `…With(id:)` and E21 names.

/// A 2020 app delegate (non-Sendable) that validates or refreshes the session, as the README's header comment did.
final class AppDelegate {
    var token = ""
    var messages: [String] = []

    #if swift(>=6)
    // Swift 6 port (PortingFromDataAPISwift.md, "Swift 6 language mode", 2): a closure a completion calls is `@Sendable`.
    func applicationWillEnterForeground(defaults: UserDefaults, then body: @escaping @Sendable (String) -> Void) {
        let auth = defaults.string(forKey: "fm-auth") ?? ""
        let token = defaults.string(forKey: "fm-token") ?? ""
        DataAPI.validateSession(token: token, completion: { success, _ in
            switch success {
            case true:
                self.token = token
                body(token)
            case false:
                DataAPI.refreshToken(auth: auth, completion: { token, _, message in
                    guard let token = token else {
                        self.messages.append(message)
                        return
                    }
                    self.token = token
                    body(token)
                })
            }
        })
    }
    #else
    func applicationWillEnterForeground(defaults: UserDefaults, then body: @escaping (String) -> Void) {
        let auth = defaults.string(forKey: "fm-auth") ?? ""
        let token = defaults.string(forKey: "fm-token") ?? ""
        DataAPI.validateSession(token: token, completion: { success, _ in
            switch success {
            case true:
                self.token = token
                body(token)
            case false:
                DataAPI.refreshToken(auth: auth, completion: { token, _, message in
                    guard let token = token else {
                        self.messages.append(message)
                        return
                    }
                    self.token = token
                    body(token)
                })
            }
        })
    }
    #endif
}

#if swift(>=6)
// Swift 6 port (1): the completions capture `self` and run on the callback queue, one at a time.
extension AppDelegate: @unchecked Sendable {}
#endif

extension DataAPI {
    /// README-style record code pasted into the DataAPI type: unqualified E21 calls.
    #if swift(>=6)
    // Swift 6 port (2): a completion handed on from a completion is `@Sendable`.
    static func renameArtist(id recid: Int, to name: String, token: String, completion: @escaping @Sendable (String, String) -> Void) {
        getRecord(id: recid, token: token, layout: "Artists") { record, code, message in
            guard let record = record, let modId = Int(record["modId"] as? String ?? "") else {
                return completion(code, message)
            }
            editRecord(id: recid, token: token, layout: "Artists", payload: ["fieldData": ["name": name]], modId: modId) { code, message in
                completion(code, message)
            }
        }
    }
    #else
    static func renameArtist(id recid: Int, to name: String, token: String, completion: @escaping (String, String) -> Void) {
        getRecord(id: recid, token: token, layout: "Artists") { record, code, message in
            guard let record = record, let modId = Int(record["modId"] as? String ?? "") else {
                return completion(code, message)
            }
            editRecord(id: recid, token: token, layout: "Artists", payload: ["fieldData": ["name": name]], modId: modId) { code, message in
                completion(code, message)
            }
        }
    }
    #endif
}

@Suite struct Corpus2020Tests {
    @Test func appDelegateValidatesThenRefreshes() throws {
        let server = try LegacyServer(.hostAndDatabase)
        try server.run {
            let delegate = AppDelegate()
            let first = wait { done in delegate.applicationWillEnterForeground(defaults: server.defaults) { done($0) } }
            let token = try #require(first)
            #expect(!token.isEmpty)
            #expect(server.defaults.string(forKey: "fm-token") == token)
            // refreshToken(auth:) keeps fm-token-expiry current, so 2019 isActiveToken() callers can be mixed in.
            #expect(DataAPI.isActiveToken())
            // Second time: the stored token validates, no new login.
            let second = wait { done in delegate.applicationWillEnterForeground(defaults: server.defaults) { done($0) } }
            #expect(second == token)
            #expect(server.requests("POST", "/sessions").count == 1)
            #expect(server.requests("GET", "/validateSession").count == 2)
            #expect(server.requests("GET", "/validateSession").last?.header("Authorization") == "Bearer \(token)")
        }
    }

    @Test func sessionCalls() throws {
        let server = try LegacyServer(.hostAndDatabase)
        try server.run {
            let refreshed = wait { done in
                DataAPI.refreshToken(auth: LegacyServer.auth) { token, code, message in done((token, code, message)) }
            }
            let token = try #require(refreshed?.0)
            #expect(refreshed?.1 == "0")
            #expect(refreshed?.2 == "OK")
            let valid = wait { done in DataAPI.validateSession(token: token) { isValid, message in done((isValid, message)) } }
            #expect(valid?.0 == true)
            let bad = wait { done in DataAPI.refreshToken(auth: "bm9ib2R5Om5vdGhpbmc=") { token, code, message in done((token, code, message)) } }
            #expect(bad?.0 == nil)
            #expect(bad?.1 == "212")
            #expect(bad?.2.isEmpty == false)
            // deleteToken(_:) → (code, message)
            let deleted = wait { done in DataAPI.deleteToken(token) { code, message in done((code, message)) } }
            #expect(deleted?.0 == "0")
            #expect(server.defaults.string(forKey: "fm-token") == nil)
            let logout = try #require(server.requests("DELETE", "/sessions/").last)
            #expect(logout.header("Authorization") == nil)
            let invalid = wait { done in DataAPI.validateSession(token: token) { isValid, message in done(isValid) } }
            #expect(invalid == false)
        }
    }

    @Test func recordCallsWithMessages() throws {
        let server = try LegacyServer(.hostAndDatabase)
        try server.run {
            let token = try #require(wait { done in DataAPI.refreshToken(auth: LegacyServer.auth) { token, _, _ in done(token) } } ?? nil)
            let layout = "Artists"
            let recid = 1

            let created = wait { done in
                DataAPI.createRecord(token: token, layout: layout, payload: ["fieldData": ["name": "Geoff II", "city": "Dallas"]]) { recordId, code, message in
                    guard let recordId = recordId else { return done(("", message)) }
                    done((recordId, message))
                }
            }
            #expect(created?.0 == "4")
            #expect(created?.1 == "OK")

            // E20 duplicateRecordWith(id:) and E21 duplicateRecord(id:) → (code, message)
            let dup20 = wait { done in DataAPI.duplicateRecordWith(id: recid, token: token, layout: layout) { code, message in done(code) } }
            #expect(dup20 == "0")
            let dup21 = wait { done in DataAPI.duplicateRecord(id: recid, token: token, layout: layout) { code, _ in done(code) } }
            #expect(dup21 == "0")

            // getRecords(offset:limit:) → ([[String: Any]]?, code, message)
            let page = wait { done in
                DataAPI.getRecords(token: token, layout: layout, offset: 4, limit: 3) { records, code, message in
                    guard let records = records else { return done([String]()) }
                    done(names(records))
                }
            }
            #expect(page == ["Geoff II", "Brian", "Brian"])
            // findRequest → ([[String: Any]]?, code, message), an "and" request.
            let found = wait { done in
                DataAPI.findRequest(token: token, layout: layout, payload: ["query": [["city": "Dallas", "name": "Sudie"]]]) { records, code, message in
                    done((names(records), code))
                }
            }
            #expect(found?.0 == ["Sudie"])
            let none = wait { done in
                DataAPI.findRequest(token: token, layout: layout, payload: ["query": [["name": "Nobody"]]]) { records, code, message in
                    done((records == nil, code, message))
                }
            }
            #expect(none?.0 == true)
            #expect(none?.1 == "401")
            #expect(none?.2.isEmpty == false)

            // E20 getRecordWith(id:) and E21 getRecord(id:)
            let e20 = wait { done in DataAPI.getRecordWith(id: 2, token: token, layout: layout) { record, code, message in done(field(record, "name")) } }
            #expect(e20 == "Geoff")
            let e21 = wait { done in DataAPI.getRecord(id: 3, token: token, layout: layout) { record, code, message in done(field(record, "name")) } }
            #expect(e21 == "Sudie")

            // E20 editRecordWith(id:) and E21 editRecord(id:) with modId, unqualified inside an extension.
            let e20Edit = wait { done in
                DataAPI.editRecordWith(id: 2, token: token, layout: layout, payload: ["fieldData": ["rating": 5]], modId: 0) { code, message in done(code) }
            }
            #expect(e20Edit == "0")
            let renamed = wait { done in DataAPI.renameArtist(id: 2, to: "Geoffrey", token: token) { code, _ in done(code) } }
            #expect(renamed == "0")
            #expect(jsonBody(server.requests("PATCH", "/records/2").last)?["modId"] as? String == "1")
            let conflict = wait { done in
                DataAPI.editRecord(id: 2, token: token, layout: layout, payload: ["fieldData": ["name": "X"]], modId: 0) { code, message in done((code, message)) }
            }
            #expect(conflict?.0 == "306")

            // E20 deleteRecordWith(id:) and E21 deleteRecord(id:)
            let d20 = wait { done in DataAPI.deleteRecordWith(id: 5, token: token, layout: layout) { code, message in done(code) } }
            #expect(d20 == "0")
            let d21 = wait { done in DataAPI.deleteRecord(id: 6, token: token, layout: layout) { code, message in done((code, message)) } }
            #expect(d21?.0 == "0")
            let d21Again = wait { done in DataAPI.deleteRecord(id: 6, token: token, layout: layout) { code, message in done(code) } }
            #expect(d21Again == "101")

            // setGlobalFields(token:payload:) → (code, message)
            let globals = wait { done in
                DataAPI.setGlobalFields(token: token, payload: ["globalFields": ["Artists::g_note": "hello"]]) { code, message in done((code, message)) }
            }
            #expect(globals?.0 == "0")
            #expect(globals?.1 == "OK")
        }
    }
}
