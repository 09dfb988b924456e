// Contract: a legacy call whose UserDefaults configuration is set but unusable says which key is wrong and
// the form it wants, not only "missing or invalid": an fm-db-path without /fmi/data/{version}/databases/NAME,
// an fm-db-path naming no database, an fm-host that is no host, an fm-host without fm-db. The value itself
// is not echoed (a URL may carry credentials).
import Foundation
import Testing
@testable import SwiftFM

@Suite struct LegacyConfigurationMessageTests {
    static func failure(_ keys: [String: String], era: LegacyEra) throws -> FMError {
        let suite = "SwiftFM.LegacyConfigurationMessage.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        for (key, value) in keys { defaults.set(value, forKey: key) }
        let result = DataAPI.withLegacyDefaults(defaults) { LegacyEnvironment.resolve(era) }
        guard case .failure(let error) = result else { Issue.record("resolved: \(result)"); return FMError(code: "0", message: "") }
        #expect(error.code == FMError.ClientCode.invalidConfiguration)
        return error
    }

    @Test func anFmDbPathWithoutTheDataAPIPathSaysTheFormItWants() throws {
        let error = try Self.failure(["fm-db-path": "http://127.0.0.1:3000"], era: .dbPath)
        #expect(error.message.contains("fm-db-path is set but is not"), "\(error.message)")
        #expect(error.message.contains("/fmi/data/v1/databases/"), "\(error.message)")
        #expect(!error.message.contains("127.0.0.1"), "\(error.message)")
    }

    @Test func anFmDbPathWithoutADatabaseSaysSo() throws {
        let error = try Self.failure(["fm-db-path": "https://fms.example.com/fmi/data/v1/databases/"], era: .dbPath)
        #expect(error.message.contains("fm-db-path names no database"), "\(error.message)")
    }

    @Test func anFmHostThatIsNoHostSaysSo() throws {
        let error = try Self.failure(["fm-host": "ftp://fms.example.com", "fm-db": "Music"], era: .hostAndDatabase)
        #expect(error.message.contains("fm-host is set but is not a host"), "\(error.message)")
    }

    @Test func anFmHostWithoutFmDbSaysFmDbIsMissing() throws {
        let error = try Self.failure(["fm-host": "fms.example.com"], era: .hostAndDatabase)
        #expect(error.message.contains("fm-db is not set"), "\(error.message)")
    }

    @Test func nothingSetStillNamesTheKeys() throws {
        let error = try Self.failure([:], era: .dbPath)
        #expect(error.message.contains("set fm-db-path (or fm-host and fm-db)"), "\(error.message)")
    }
}
