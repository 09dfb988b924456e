// Contract: a legacy call whose UserDefaults configuration is set but unusable says which key is wrong and
// the form it wants, not only "missing or invalid": an fm-db-path without /fmi/data/{version}/databases/NAME,
// an fm-db-path naming no database, an fm-host that is no host, an fm-host without fm-db. The value itself
// is not echoed (a URL may carry credentials, in its user part too). A value of whitespace only is unset; a value
// that is not a string (a number, an array) is no usable setting and never echoed either.
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

    @Test func credentialsInAnUnusableURLAreNeverRepeated() throws {
        let cases: [([String: String], LegacyEra)] = [
            (["fm-db-path": "https://alice:s3cret@fms.example.com/fmi/data/v1/databases/"], .dbPath),
            (["fm-db-path": "ftp://alice:s3cret@fms.example.com/fmi/data/v1/databases/Music"], .dbPath),
            (["fm-host": "https://alice:s3cret@fms.example.com"], .hostAndDatabase),
            (["fm-host": "ftp://alice:s3cret@fms.example.com", "fm-db": "Music"], .hostAndDatabase),
        ]
        for (keys, era) in cases {
            let error = try Self.failure(keys, era: era)
            #expect(!error.message.contains("s3cret") && !error.message.contains("alice"), "\(error.message)")
            #expect(!error.description.contains("s3cret"), "\(error.description)")
        }
    }

    @Test func aValueOfWhitespaceOnlyIsUnset() throws {
        let error = try Self.failure(["fm-db-path": " \n\t ", "fm-host": "\u{3000}"], era: .dbPath)
        #expect(!error.message.contains("is set"), "\(error.message)")
        #expect(error.message.contains("set fm-db-path (or fm-host and fm-db)"), "\(error.message)")
    }

    @Test func aValueThatIsNotAStringIsNoUsableSetting() throws {
        let suite = "SwiftFM.LegacyConfigurationMessage.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(["https://alice:s3cret@fms.example.com"], forKey: "fm-db-path")
        defaults.set(["s3cret": 1], forKey: "fm-host")
        let result = DataAPI.withLegacyDefaults(defaults) { LegacyEnvironment.resolve(.dbPath) }
        guard case .failure(let error) = result else {
            Issue.record("resolved: \(result)")
            return
        }
        #expect(error.code == FMError.ClientCode.invalidConfiguration)
        #expect(!error.message.contains("s3cret"), "\(error.message)")
    }
}
