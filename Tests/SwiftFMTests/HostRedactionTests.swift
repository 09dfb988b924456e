import Foundation
import Testing
@testable import SwiftFM

/// A host written with user info (`https://admin:pw@host`) is refused (-1001), and neither the error nor
/// `FMConfiguration.description` (and so `DataAPI.description`) shows its password. A host's query and fragment
/// (never sent: SwiftFM drops them) are not shown either: they are where API keys are written.
@Suite("Redaction of hosts with user info, queries and fragments")
struct HostRedactionTests {
    @Test(arguments: ["https://admin:hunter2-secret@fms.example.com", "admin:hunter2-secret@fms.example.com:8443",
                      "http://hunter2-secret@127.0.0.1:3000/prefix", "https://admin:hunter2-secret/x?#@fms.example.com"])
    func descriptionsNeverShowUserInfo(host: String) {
        let configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "other")
        #expect(!configuration.description.contains("hunter2-secret"))
        #expect(!configuration.debugDescription.contains("hunter2-secret"))
        #expect(!DataAPI(configuration: configuration).description.contains("hunter2-secret"))
        #expect(configuration.description.contains("fms.example.com") || configuration.description.contains("127.0.0.1"))
        if case .failure(let error) = configuration.resolvedBase() {
            #expect(!error.description.contains("hunter2-secret"))
        } else {
            Issue.record("a host with user info must be refused")
        }
    }

    @Test func ordinaryHostsAreShownAsGiven() {
        let configuration = FMConfiguration(host: "https://fms.example.com:8443/prefix", database: "Music", username: "a", password: "b")
        #expect(configuration.description.contains("host: https://fms.example.com:8443/prefix,"))
    }

    @Test(arguments: ["https://fms.example.com/prefix?key=hunter2-secret", "fms.example.com:8443?token=hunter2-secret&a=b",
                      "https://fms.example.com#hunter2-secret", "https://admin:pw@fms.example.com/p?key=hunter2-secret"])
    func descriptionsNeverShowAQueryOrFragment(host: String) {
        let proxy = URL(string: "http://proxy.example.com:3128/?auth=hunter2-secret")
        var configuration = FMConfiguration(host: host, database: "Music", username: "admin", password: "other")
        configuration.proxy = proxy
        for text in [configuration.description, configuration.debugDescription, DataAPI(configuration: configuration).description,
                     String(describing: Mirror(reflecting: configuration).children.map(\.value))] {
            #expect(!text.contains("hunter2-secret"), "\(text)")
            #expect(text.contains("fms.example.com"))
        }
        #expect(configuration.description.contains("proxy.example.com:3128"))
        if case .failure(let error) = configuration.resolvedBase() {
            #expect(!error.description.contains("hunter2-secret"))
        }
    }
}
