import Foundation
import Testing
@testable import SwiftFMEmulator

// The emulator's sessions as FileMaker Server keeps them: a token bound to its database, 15 minutes of idle that
// every call slides (errors too), the session cap (956), refused logins (212), a second logout (952), a user name
// that ignores case and a password that does not, routes that ignore case.

@Suite struct SessionTests {
    @Test func tokenIsBoundToTheDatabaseSpelling() throws {
        let h = try Harness()
        try h.login()
        let other = try Harness(emulator: h.emulator, db: "contacts")
        other.token = h.token
        let a = other.send("GET", "\(other.base)/layouts", contentType: nil)
        #expect(a.status == 401)
        #expect(a.code == "952")
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
    }

    @Test func fmp12ExtensionIsStripped() throws {
        let h = try Harness()
        let a = h.loginRequest(db: "Contacts.fmp12")
        #expect(a.status == 200)
        h.token = try #require(a.response["token"]?.stringValue)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        #expect(h.send("GET", "/fmi/data/vLatest/databases/Contacts.fmp12/layouts", contentType: nil).status == 200)
    }

    @Test func unknownDatabaseIs802() throws {
        let h = try Harness()
        let a = h.loginRequest(db: "Nope")
        #expect(a.status == 500)
        #expect(a.code == "802")
    }

    @Test func validateSessionAnswersNotInUse() throws {
        let h = try Harness()
        try h.login()
        let a = h.send("GET", "/fmi/data/v2/validateSession", contentType: nil)
        #expect(a.status == 200)
        #expect(a.response == .object([("isSessionInUse", .bool(false))]))
        let none = h.send("GET", "/fmi/data/v2/validateSession", bearer: false, contentType: nil)
        #expect(none.status == 401)
        #expect(none.code == "10")
    }

    @Test func missingBearerIsCode10() throws {
        let h = try Harness()
        let a = h.send("GET", "\(h.base)/layouts", bearer: false, contentType: nil)
        #expect(a.status == 401)
        #expect(a.code == "10")
    }

    @Test func sessionCapAnswers956() throws {
        let h = try Harness()
        for _ in 0..<5 { #expect(h.loginRequest().status == 200) }
        #expect(h.emulator.activeSessionCount == 5)
        let a = h.loginRequest()
        #expect(a.code == "956")
        #expect(a.status == 500)
        // Expired sessions free their slot.
        h.emulator.advanceClock(by: 901)
        #expect(h.emulator.activeSessionCount == 0)
        #expect(h.loginRequest().status == 200)
    }

    @Test func emptyLoginBodyIsAccepted() throws {
        let h = try Harness()
        #expect(h.loginRequest(body: nil).status == 200)
        #expect(h.loginRequest(body: "", contentType: nil).status == 200)
        #expect(h.loginRequest(body: #"{"fmDataSource":[{"database":"Other","username":"u","password":"p"}]}"#).status == 200)
        #expect(h.loginRequest(body: #"{"fmDataSource":"x"}"#).code == "1708")
    }

    @Test func rejectLoginsAnswers212() throws {
        let h = try Harness()
        h.emulator.rejectLogins(true)
        let a = h.loginRequest()
        #expect(a.status == 401)
        #expect(a.code == "212")
        h.emulator.rejectLogins(false)
        #expect(h.loginRequest().status == 200)
    }

    @Test func usernameIsCaseInsensitivePasswordIsNot() throws {
        let h = try Harness()
        #expect(h.loginRequest(user: "ADMIN").status == 200)
        #expect(h.loginRequest(password: "ADMIN").status == 401)
    }

    @Test func expireTokenAndExpireAll() throws {
        let h = try Harness()
        let t1 = try h.login()
        let t2 = try h.login()
        #expect(h.emulator.activeSessionCount == 2)
        h.emulator.expireToken(t1)
        h.token = t1
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).code == "952")
        h.token = t2
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        h.emulator.expireAllTokens()
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).code == "952")
        #expect(h.emulator.activeSessionCount == 0)
    }

    @Test func logoutTwiceIs952() throws {
        let h = try Harness()
        let t = try h.login()
        #expect(h.send("DELETE", "\(h.base)/sessions/\(t)", bearer: false, contentType: nil).status == 200)
        let again = h.send("DELETE", "\(h.base)/sessions/\(t)", bearer: false, contentType: nil)
        #expect(again.status == 401)
        #expect(again.code == "952")
    }

    @Test func expiryIsExactlyFifteenMinutesIdle() throws {
        let h = try Harness()
        try h.login()
        h.emulator.advanceClock(by: 14 * 60 + 59)
        #expect(h.send("GET", "/fmi/data/vLatest/validateSession", contentType: nil).status == 200)
        h.emulator.advanceClock(by: 15 * 60 + 1)
        #expect(h.send("GET", "/fmi/data/vLatest/validateSession", contentType: nil).code == "952")
    }

    @Test func errorsStillSlideTheSession() throws {
        let h = try Harness()
        try h.login()
        h.emulator.advanceClock(by: 800)
        #expect(h.send("GET", "\(h.base)/layouts/Nope/records", contentType: nil).code == "105")
        h.emulator.advanceClock(by: 800)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
    }

    @Test func routingIsCaseInsensitiveForKeywordsAndAllVersions() throws {
        let h = try Harness()
        try h.login()
        for v in ["v1", "v2", "vLatest", "VLATEST"] {
            #expect(h.send("GET", "/fmi/data/\(v)/databases/Contacts/layouts", contentType: nil).status == 200, "\(v)")
        }
        #expect(h.send("GET", "/fmi/data/vLatest/ProductInfo", contentType: nil).status == 200)
        #expect(h.send("GET", "/fmi/data/vLatest/DATABASES/Contacts/Layouts/contacts/RECORDS", contentType: nil).status == 200)
        #expect(h.send("GET", "/fmi/data/v3/productInfo", contentType: nil).status == 404)
        #expect(h.send("GET", "/fmi/data/vLatest/nothing", contentType: nil).status == 404)
        let verb = h.send("PUT", "\(h.base)/layouts/Contacts/records", body: "{}")
        #expect(verb.status == 405)
        #expect(verb.code == "1704")
    }

    @Test func tokensAreUnique() throws {
        let h = try Harness()
        let a = try h.login(), b = try h.login()
        #expect(a != b)
        #expect(h.emulator.activeTokens.sorted() == [a, b].sorted())
    }
}
