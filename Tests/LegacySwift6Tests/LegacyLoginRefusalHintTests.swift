// Contract: a login FileMaker refuses on a legacy surface says what to check, as on the modern one: a wrong
// password (212) names the database and host and says to check the account, its password and its fmrest
// privilege; a database the server does not have open (802) names the UserDefaults key that set it
// (`fm-db-path`, or `fm-db` for the 2020 keys). Both in FMError.current and in the 2020 `message`.
import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

@Suite struct LegacyLoginRefusalHintTests {
    static let wrongPassword = Data("admin:wrong".utf8).base64EncodedString()

    @Test func aWrongPasswordSaysWhatToCheckOnThe2019Surface() throws {
        let server = try LegacyServer(.dbPath)
        let result = try server.run {
            wait { done in DataAPI.refreshToken(for: Self.wrongPassword) { token, _, code in done((token, code, FMError.current)) } }
        }
        let (token, code, error) = try #require(result)
        #expect(token == nil && code == "212")
        let message = try #require(error?.message)
        #expect(message.contains("database Legacy") && message.contains("127.0.0.1:"), "\(message)")
        #expect(message.contains("check the account name and password") && message.contains("fmrest"), "\(message)")
    }

    @Test func anUnknownDatabaseNamesFmDbPath() throws {
        let server = try LegacyServer(.dbPath)
        server.defaults.set("\(server.url.absoluteString)/fmi/data/v1/databases/Legasy", forKey: "fm-db-path")
        let result = try server.run {
            wait { done in DataAPI.refreshToken(for: LegacyServer.auth) { token, _, code in done((token, code, FMError.current)) } }
        }
        let (token, code, error) = try #require(result)
        #expect(token == nil && code == "802")
        let message = try #require(error?.message)
        #expect(message.contains("no database Legasy is open") && message.contains("check fm-db-path"), "\(message)")
    }

    @Test func anUnknownDatabaseNamesFmDbOnThe2020Surface() throws {
        let server = try LegacyServer(.hostAndDatabase)
        server.defaults.set("Legasy", forKey: "fm-db")
        let result = try server.run {
            wait { done in DataAPI.refreshToken(auth: LegacyServer.auth) { token, code, message in done((token, code, message, FMError.current)) } }
        }
        let (token, code, message, error) = try #require(result)
        #expect(token == nil && code == "802")
        #expect(message.contains("no database Legasy is open") && message.contains("check fm-db"), "\(message)")
        #expect(error?.message == message)
    }
}
