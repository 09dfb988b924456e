import Foundation
import Testing

// `FMError.current` inside the completions of the 2019 `DataAPI.swift` surface, which are called from
// inside the core's completions (and, for a missing configuration, without reaching the core at all).

@Suite struct LegacyCompletionErrorTests {
    @Test func era2019CompletionsSeeTheWholeError() throws {
        let server = try LegacyServer(.dbPath)
        try server.run {
            let token = try server.login()
            let missing = wait { done in
                DataAPI.getRecordWith(id: 9_999, token: token, layout: "Artists") { record, code in done((code, FMError.current)) }
            }
            #expect(missing?.0 == "101")
            #expect(missing?.1?.code == "101" && missing?.1?.httpStatus == 500 && missing?.1?.message.isEmpty == false)

            let expired = wait { done in
                DataAPI.findRequest(token: "not-a-session", layout: "Artists", payload: ["query": [["name": "Brian"]]]) { records, code in
                    done((code, FMError.current))
                }
            }
            #expect(expired?.0 == "952" && expired?.1?.code == "952" && expired?.1?.httpStatus == 401)

            let ok = wait { done in
                DataAPI.getRecords(token: token, layout: "Artists", offset: 1, limit: 1) { records, code in done((code, FMError.current)) }
            }
            #expect(ok?.0 == "0" && ok?.1 == nil)
        }
    }

    @Test func missingConfigurationToo() throws {
        let suite = "SwiftFM.LegacyTests.empty.\(UUID().uuidString)"
        let empty = try #require(UserDefaults(suiteName: suite))
        defer { empty.removePersistentDomain(forName: suite) }
        DataAPI.withLegacyDefaults(empty) {
            let result = wait { done in DataAPI.deleteRecordWith(id: 1, token: "t", layout: "Artists") { code in done((code, FMError.current)) } }
            #expect(result?.0 == "-1001" && result?.1?.code == "-1001" && result?.1?.message.contains("fm-") == true)
        }
    }
}
