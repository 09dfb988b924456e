// Call sites written against the 2019 `DataAPI.swift` (class functions, an explicit token kept by the caller,
// optional results) compile unchanged and do what they did, against the emulator.
// Shared by LegacySwift5Tests and LegacySwift6Tests (symlinked into both): the same call sites compiled
// in Swift 5 and in Swift 6 language mode.
import Foundation
import Testing

// Call sites in the style of DataAPI.swift June – August 2019 (E10–E19) and its README
// (`45d20f4` era): `(value?, code)` shapes with `guard let`, `modId:`, unlabelled ids (E15–E16),
// duplicate, globals, `deleteToken`, and the instance `DataAPI().createRecord(…)` of E11–E18.

/// A 2019 daemon object (non-Sendable) that keeps its own token and state, captured by its closures.
final class SyncDaemon {
    var token: String?
    var auth: String
    var fetched: [[String: Any]] = []
    var log: [String] = []

    init(defaults: UserDefaults) {
        token = defaults.string(forKey: "fm-token")
        auth = defaults.string(forKey: "fm-auth") ?? ""
    }

    /// The 2019 README's token guard: `switch isActiveToken()` then `refreshToken(for:)`.
    #if swift(>=6)
    // Swift 6 port (PortingFromDataAPISwift.md, "Swift 6 language mode", 2): a closure a completion calls is `@Sendable`.
    func withToken(_ body: @escaping @Sendable (String) -> Void) {
        switch DataAPI.isActiveToken() {
        case true:
            body(self.token ?? "")
        case false:
            DataAPI.refreshToken(for: self.auth, completion: { token, expiry, code in
                guard let token = token, let expiry = expiry else {
                    self.log.append("refresh token sad. \(code)")
                    return
                }
                self.token = token
                self.log.append("token expires \(expiry > Date())")
                body(token)
            })
        }
    }

    func sync(completion: @escaping @Sendable () -> Void) {
        withToken { token in
            DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 20, completion: { records, code in
                guard let records = records else {
                    self.log.append("get records sad. \(code)")
                    completion()
                    return
                }
                for record in records {
                    self.fetched.append(record)
                }
                completion()
            })
        }
    }
    #else
    func withToken(_ body: @escaping (String) -> Void) {
        switch DataAPI.isActiveToken() {
        case true:
            body(self.token ?? "")
        case false:
            DataAPI.refreshToken(for: self.auth, completion: { token, expiry, code in
                guard let token = token, let expiry = expiry else {
                    self.log.append("refresh token sad. \(code)")
                    return
                }
                self.token = token
                self.log.append("token expires \(expiry > Date())")
                body(token)
            })
        }
    }

    func sync(completion: @escaping () -> Void) {
        withToken { token in
            DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 20, completion: { records, code in
                guard let records = records else {
                    self.log.append("get records sad. \(code)")
                    completion()
                    return
                }
                for record in records {
                    self.fetched.append(record)
                }
                completion()
            })
        }
    }
    #endif
}

#if swift(>=6)
// Swift 6 port (1): the completions capture `self` and run on the callback queue, one at a time; the test reads
// the state after the last one signalled.
extension SyncDaemon: @unchecked Sendable {}
#endif

@Suite struct Corpus2019Tests {
    @Test func daemonRefreshesAndFetches() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let daemon = SyncDaemon(defaults: server.defaults)
            let done = DispatchSemaphore(value: 0)
            daemon.sync { done.signal() }
            #expect(done.wait(timeout: .now() + 300) == .success)
            #expect(names(daemon.fetched) == ["Brian", "Geoff", "Sudie"])
            #expect(daemon.log == ["token expires true"])
            #expect(daemon.fetched.first?["recordId"] as? String == "1")
            #expect(daemon.fetched.first?["modId"] as? String == "0")
        }
    }

    @Test func optionalRecordShapes() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // getRecords(token:layout:limit:) → ([[String: Any]]?, String)
            let limited = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in
                    guard let records = records else { return done(([String](), code)) }
                    done((names(records), code))
                }
            }
            #expect(limited?.0 == ["Brian"])
            // `{ _, _ in }` bodies compile and resolve (to the optional shape).
            let ignored = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 1) { _, _ in done(true) }
            }
            #expect(ignored == true)
            // findRequest → ([[String: Any]]?, String): an "or" request.
            let found = wait { done in
                DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Brian"], ["name": "Geoff"]]], completion: { records, code in
                    guard let records = records else { return done(([String](), code)) }
                    done((names(records).sorted(), code))
                })
            }
            #expect(found?.0 == ["Brian", "Geoff"])
            #expect(found?.1 == "0")
            let none = wait { done in
                DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Nobody"]]]) { records, code in
                    done((records == nil, code))
                }
            }
            #expect(none?.0 == true)
            #expect(none?.1 == "401")
            // getRecordWith(id:) → ([String: Any]?, String) and the unlabelled E15 spelling.
            let byId = wait { done in
                DataAPI.getRecordWith(id: 2, token: token, layout: "Artists", completion: { record, code in
                    guard let record = record else { return done("none: \(code)") }
                    done(field(record, "name") ?? "")
                })
            }
            #expect(byId == "Geoff")
            let unlabelled = wait { done in
                DataAPI.getRecordWith(3, token: token, layout: "Artists") { record, code in done((field(record, "name"), code)) }
            }
            #expect(unlabelled?.0 == "Sudie")
            let missing = wait { done in
                DataAPI.getRecordWith(42, token: token, layout: "Artists") { record, code in done((record == nil, code)) }
            }
            #expect(missing?.0 == true)
            #expect(missing?.1 == "101")
        }
    }

    @Test func createDuplicateEditDelete() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // E19 class createRecord → (String?, String)
            let created = wait { done in
                DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Sudie II", "city": "Austin"]]) { recordId, code in
                    guard let recordId = recordId else { return done(("", code)) }
                    done((recordId, code))
                }
            }
            #expect(created?.0 == "4")
            #expect(created?.1 == "0")
            // E13–E18 instance createRecord, optional and non-optional bodies.
            let instance = wait { done in
                DataAPI().createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Instance"]]) { recordId, code in
                    guard let recordId = recordId else { return done("none: \(code)") }
                    done(recordId)
                }
            }
            #expect(instance == "5")
            #if swift(>=6)
            // Swift 6 port (3): the completion hands the id on instead of assigning a local variable.
            let (code11, nonOptionalId) = wait { done in
                DataAPI().createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Eleven"]], completion: { recordId, code in
                    let id: String = recordId
                    done((code, id))
                })
            } ?? ("", "")
            #else
            var nonOptionalId = ""
            let code11 = wait { done in
                DataAPI().createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "Eleven"]], completion: { recordId, code in
                    nonOptionalId = recordId
                    done(code)
                })
            }
            #endif
            #expect(code11 == "0")
            #expect(nonOptionalId == "6")

            // Duplicate: id: (E14, E17–E19) and unlabelled (E15–E16).
            let dup = wait { done in DataAPI.duplicateRecordWith(id: 1, token: token, layout: "Artists") { code in done(code) } }
            #expect(dup == "0")
            let dup15 = wait { done in DataAPI.duplicateRecordWith(2, token: token, layout: "Artists", completion: { code in done(code) }) }
            #expect(dup15 == "0")
            #expect(server.requests("POST", "/layouts/Artists/records/1").count == 1)

            // Edit with modId (E14+) is sent; unlabelled (E15–E16).
            let edit = wait { done in
                DataAPI.editRecordWith(id: 4, token: token, layout: "Artists", payload: ["fieldData": ["city": "Dallas"]], modId: 0) { code in done(code) }
            }
            #expect(edit == "0")
            #expect(jsonBody(server.requests("PATCH", "/records/4").last)?["modId"] as? String == "0")
            let stale = wait { done in
                DataAPI.editRecordWith(4, token: token, layout: "Artists", payload: ["fieldData": ["city": "Austin"]], modId: 0) { code in done(code) }
            }
            #expect(stale == "306")

            // Delete, unlabelled (E15–E16).
            let deleted = wait { done in DataAPI.deleteRecordWith(4, token: token, layout: "Artists") { code in done(code) } }
            #expect(deleted == "0")
            let gone = wait { done in DataAPI.getRecordWith(id: 4, token: token, layout: "Artists") { record, code in done(code) } }
            #expect(gone == "101")
        }
    }

    @Test func globalsAndDeleteToken() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            // E14–E16: setGlobalFields(token:layout:payload:) (layout ignored) and E17–E19 without layout.
            let withLayout = wait { done in
                DataAPI.setGlobalFields(token: token, layout: "Artists", payload: ["globalFields": ["Artists::g_note": "first"]]) { code in done(code) }
            }
            #expect(withLayout == "0")
            let plain = wait { done in
                DataAPI.setGlobalFields(token: token, payload: ["globalFields": ["Artists::g_note": "second"]], completion: { code in done(code) })
            }
            #expect(plain == "0")
            #expect(server.requests("PATCH", "/globals").count == 2)
            #expect((jsonBody(server.requests("PATCH", "/globals").last)?["globalFields"] as? [String: Any])?["Artists::g_note"] as? String == "second")

            // E18–E19: deleteToken(_:) → (code); clears fm-token and writes the Int 0 to fm-token-expiry.
            #expect(DataAPI.isActiveToken())
            let code = wait { done in DataAPI.deleteToken(token) { code in done(code) } }
            #expect(code == "0")
            #expect(server.defaults.string(forKey: "fm-token") == nil)
            #expect(server.defaults.integer(forKey: "fm-token-expiry") == 0)
            #expect(DataAPI.isActiveToken() == false)
            // The old token is dead on the server.
            let after = wait { done in DataAPI.getRecords(token: token, layout: "Artists", limit: 1) { records, code in done(code) } }
            #expect(after == "952")
        }
    }

    @Test func wildcardBodiesAndSharedSession() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            let refreshed = wait { done in DataAPI.refreshToken(for: LegacyServer.auth) { _, _, _ in done(true) } }
            #expect(refreshed == true)
            let found = wait { done in DataAPI.findRequest(token: token, layout: "Artists", payload: ["query": [["name": "Brian"]]]) { _, _ in done(true) } }
            #expect(found == true)
            let created = wait { done in DataAPI.createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "W"]]) { _, _ in done(true) } }
            #expect(created == true)
            let instance = wait { done in DataAPI().createRecord(token: token, layout: "Artists", payload: ["fieldData": ["name": "V"]]) { _, _ in done(true) } }
            #expect(instance == true)
            // `DataAPI()` keeps its managed session in fm-token, so the modern API reuses the legacy login.
            let current = try #require(server.defaults.string(forKey: "fm-token"))
            let service = DataAPI()
            #expect(service.currentToken == current)
            let logins = server.requests("POST", "/sessions").count
            let count = wait { done in service.getRecords(layout: "Artists") { found, code in done((found?.records.count, code)) } }
            #expect(count?.0 == 5)
            #expect(count?.1 == "0")
            #expect(server.requests("POST", "/sessions").count == logins)
        }
    }
}
