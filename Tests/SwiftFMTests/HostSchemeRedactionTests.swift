import Foundation
import Testing
@testable import SwiftFM

/// A host's user info, query and fragment are hidden from `FMConfiguration.description` (and so `DataAPI.description`)
/// and from the error of a host that cannot be used, however the host is written: its scheme is the `scheme://` it
/// starts with, never a `://` further on (a host written without a scheme whose query or fragment holds a URL).
@Suite("A host's scheme is the one it starts with: a later :// hides nothing of its secrets")
struct HostSchemeRedactionTests {
    /// Failed before (each case: the description and the invalid-host error showed the whole host, password or key
    /// included): the `://` inside the query or fragment was taken for the scheme's, and nothing before it was looked at.
    @Test(arguments: ["admin:hunter2-secret@fms.example.com/?next=https://other.example.com",
                      "fms.example.com?key=hunter2-secret&next=https://other.example.com",
                      "fms.example.com#hunter2-secret://",
                      "admin:hunter2-secret@fms.example.com#https://other.example.com"])
    func aLaterSchemeSeparatorHidesNothing(host: String) {
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "other")
        for text in [configuration.description, configuration.debugDescription, DataAPI(configuration: configuration).description] {
            #expect(!text.contains("hunter2-secret"), "\(text)")
            #expect(text.contains("fms.example.com"), "\(text)")
        }
        if case .failure(let error) = configuration.resolvedBase() {
            #expect(!error.description.contains("hunter2-secret"), "\(error)")
        }
    }

    /// Held: a host written with its scheme keeps it as written, the user info and query hidden after it.
    @Test func aLeadingSchemeIsKept() {
        #expect(Redaction.host("HTTPS://admin:pw@fms.example.com:8443/p?key=k") == "HTTPS://\(Redaction.placeholder)@fms.example.com:8443/p?\(Redaction.placeholder)")
        #expect(Redaction.host("fms.example.com:8443/p") == "fms.example.com:8443/p")
    }
}
