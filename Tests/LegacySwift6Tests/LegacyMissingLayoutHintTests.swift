// Contract: on the legacy surface too, FileMaker's 105 ("Layout is missing") is named: FMError.current's message keeps
// FileMaker's words and adds the layout and the database asked for (as MissingLayoutHintTests shows for the modern one).
// A find whose payload names a response layout (`layout.response`) that is missing does not blame the layout alone.
import Foundation
import Testing
@testable import SwiftFM
import SwiftFMEmulator

@Suite struct LegacyMissingLayoutHintTests {
    @Test func aMisspeltLayoutIsNamedOnThe2019Surface() throws {
        let server = try LegacyServer(.dbPath)
        let result = try server.run { () -> (String, FMError?)? in
            guard let token = wait({ done in DataAPI.refreshToken(for: LegacyServer.auth) { token, _, _ in done(token) } }) ?? nil else { return nil }
            return wait { done in
                DataAPI.getRecords(token: token, layout: "Artistz", limit: 1) { (_: [[String: Any]]?, code: String) in done((code, FMError.current)) }
            }
        }
        let (code, error) = try #require(result)
        #expect(code == "105")
        #expect(error?.message == #"Layout is missing; no layout "Artistz" in database Legacy: check the layout's name (layouts() lists the ones this account can use)"#,
                "\(String(describing: error))")
    }

    @Test func aMissingResponseLayoutOfALegacyFindIsNamed() throws {
        let server = try LegacyServer(.dbPath)
        let result = try server.run { () -> (String, FMError?)? in
            guard let token = wait({ done in DataAPI.refreshToken(for: LegacyServer.auth) { token, _, _ in done(token) } }) ?? nil else { return nil }
            return wait { done in
                DataAPI.findRequest(token: token, layout: "Artists",
                                    payload: ["query": [["name": "*"]], "layout.response": "Artistz"]) { _, code in
                    done((code, FMError.current))
                }
            }
        }
        let (code, error) = try #require(result)
        #expect(code == "105")
        let message = error?.message ?? ""
        #expect(message.contains(#""Artistz""#), "\(message)")
        #expect(!message.contains(#"no layout "Artists" in database"#), "\(message)")
    }
}
