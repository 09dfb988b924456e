import Foundation
import Testing
@testable import SwiftFM

/// An OData call on a table names that table (``FMCallStart/table``, `fm.table`) exactly as the caller wrote
/// it, whatever the name holds: parentheses (kept unencoded in the path, as OData allows), a key that holds
/// parentheses or quotes, spaces, `/`, `?`, `%` and non-ASCII letters. The key, the field and the query are
/// never part of it.
@Suite("OData: the table a call names is the entity set as written")
struct ODataTableNameIsTheEntitySetTests {
    private static let odata = FMOData(configuration: FMConfiguration(host: "fms.example.com", database: "Sh/op (2)",
                                                                      username: "u", password: "p"))
    private static let names = ["Sales (2024)", "Order Lines", "a/b?c", "50% off", "Café ünïcode", "T(x)", "Items)", "(", "x'y"]

    private static func table<V>(_ call: ODataCall<V>) -> String? { odata.endpoint(call, headers: nil).table }

    @Test(arguments: names) func everyKindOfCallNamesTheSet(_ set: String) {
        let keys: [FMODataKey] = [1, "a(b)'c", "plain"]
        #expect(Self.table(Self.odata.pageCall(from: set, query: FMODataQuery(top: 2))) == set)
        #expect(Self.table(Self.odata.countCall(of: set, filter: nil, viaCollection: false)) == set)
        #expect(Self.table(Self.odata.countCall(of: set, filter: nil, viaCollection: true)) == set)
        #expect(Self.table(Self.odata.createCall(in: set, fields: ["a": 1])) == set)
        for key in keys {
            #expect(Self.table(Self.odata.recordCall(from: set, key: key, query: FMODataQuery())) == set, "\(key)")
            #expect(Self.table(Self.odata.downloadCall(from: set, key: key, field: "Photo", sink: nil) { _ in 0 }) == set, "\(key)")
            #expect(Self.table(Self.odata.updateCall(in: set, key: key, fields: ["a": 1])) == set, "\(key)")
            #expect(Self.table(Self.odata.deleteCall(in: set, key: key)) == set, "\(key)")
            #expect(Self.table(Self.odata.uploadCall(in: set, key: key, field: "Photo", body: .none, fileName: "f")) == set, "\(key)")
        }
    }

    /// A next link, as the server wrote it (the set's parentheses raw or encoded), names the same set.
    @Test func aNextLinkNamesTheSet() throws {
        for path in ["Sales%20(2024)", "Sales%20%282024%29"] {
            let link = try #require(URL(string: "https://fms.example.com/fmi/odata/v4/Sh%2Fop%20(2)/\(path)?$skip=2&$top=2"))
            #expect(Self.table(Self.odata.pageCall(following: link)) == "Sales (2024)", "\(path)")
        }
    }
}
