import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// `$apply` (FileMaker 22.0.1+): `filter`, `aggregate`, `groupby` against the Shop solution; every aggregated
/// answer is checked against the same computation done here over the rows a plain read returns.
@Suite struct ODataApplyTests {
    /// Percent-encodes `text` for a query value the way SwiftFM does (parentheses, commas, `/` kept).
    static func q(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~!$'()*,;=:@/")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The rows of a plain read: every Customer with its fields.
    func customers(_ client: ODataClient) -> [JSON] {
        let answer = client.send("GET", "/Shop/Customers")
        #expect(answer.status == 200)
        return answer.rows
    }

    static func decimal(_ json: JSON?) -> Decimal? {
        json?.numberText.flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) }
    }

    @Test("groupby with sum, average, min, max, countdistinct matches a computation over the same rows")
    func groupByMatchesComputation() throws {
        let client = try ODataClient()
        let rows = customers(client)
        let apply = "groupby((city),aggregate(score with sum as total,score with average as mean,score with min as low,"
            + "score with max as high,name with countdistinct as names))"
        let answer = client.send("GET", "/Shop/Customers?$apply=" + Self.q(apply))
        #expect(answer.status == 200, "\(answer.text)")
        // Expected: group the plain rows by city here.
        var groups: [String: [JSON]] = [:]
        for row in rows { groups[row["city"]?.stringValue ?? "", default: []].append(row) }
        #expect(answer.rows.count == groups.count)
        #expect(answer.rows.map { $0["city"]?.stringValue ?? "" } == groups.keys.sorted(), "groups come in the order of their values")
        for row in answer.rows {
            let city = row["city"]?.stringValue ?? ""
            let members = groups[city] ?? []
            let scores = members.compactMap { Self.decimal($0["score"]) }
            let total = scores.reduce(Decimal(0), +)
            #expect(Self.decimal(row["total"]) == total, "sum for \(city)")
            #expect(Self.decimal(row["mean"]) == total / Decimal(scores.count), "average for \(city)")
            #expect(Self.decimal(row["low"]) == scores.min(), "min for \(city)")
            #expect(Self.decimal(row["high"]) == scores.max(), "max for \(city)")
            let names = Set(members.compactMap { $0["name"]?.stringValue }.filter { !$0.isEmpty })
            #expect(Self.decimal(row["names"]) == Decimal(names.count), "countdistinct for \(city)")
            #expect(row["@id"] == nil && row["@odata.id"] == nil, "aggregated rows are not entities")
        }
    }

    @Test("aggregate alone: one row over every record; filter first narrows it")
    func aggregateAndFilter() throws {
        let client = try ODataClient()
        let rows = customers(client)
        let scores = rows.compactMap { Self.decimal($0["score"]) }
        let all = client.send("GET", "/Shop/Customers?$apply=" + Self.q("aggregate(score with sum as total,joined with max as latest)"))
        #expect(all.status == 200, "\(all.text)")
        #expect(all.rows.count == 1)
        #expect(Self.decimal(all.rows.first?["total"]) == scores.reduce(0, +))
        let latest = rows.compactMap { $0["joined"]?.stringValue }.max()
        #expect(all.rows.first?["latest"]?.stringValue == latest, "dates aggregate as dates (YYYY-MM-DD)")

        let berlin = rows.filter { $0["city"]?.stringValue == "Berlin" }.compactMap { Self.decimal($0["score"]) }
        let filtered = client.send("GET", "/Shop/Customers?$apply=" + Self.q("filter(city eq 'Berlin')/aggregate(score with sum as total)"))
        #expect(filtered.status == 200, "\(filtered.text)")
        #expect(Self.decimal(filtered.rows.first?["total"]) == berlin.reduce(0, +))

        // Nothing matches: sum of no value is null (SQL's rule), countdistinct 0.
        let none = client.send("GET", "/Shop/Customers?$apply="
                               + Self.q("filter(city eq 'Nowhere')/aggregate(score with sum as total,code with countdistinct as n)"))
        #expect(none.rows.first?["total"] == .null)
        #expect(none.rows.first?["n"]?.numberText == "0")
    }

    @Test("filter alone reads records as usual; a filter after groupby filters the groups; $orderby/$top/$count on groups")
    func filterOnlyAndAfterGrouping() throws {
        let client = try ODataClient()
        let only = client.send("GET", "/Shop/Customers?$apply=" + Self.q("filter(score ge 4)") + "&$select=code&$orderby=code")
        #expect(only.status == 200, "\(only.text)")
        #expect(only.rows.map { $0["code"]?.stringValue } == ["ALFKI", "ZOE"])
        // Filters only are a normal read: server-driven paging keeps the $apply in the next link.
        let first = client.send("GET", "/Shop/Customers?$apply=" + Self.q("filter(score ge 4)") + "&$select=code&$count=true",
                                headers: [("Prefer", "odata.maxpagesize=1")])
        #expect(first.rows.map { $0["code"]?.stringValue } == ["ALFKI"])
        #expect(first.json?["@odata.count"]?.numberText == "2")
        let next = try #require(first.json?["@odata.nextLink"]?.stringValue)
        let path = try #require(next.range(of: "/fmi/odata/v4").map { String(next[$0.upperBound...]) })
        #expect(path.contains("$apply=filter(score%20ge%204)"))
        let second = client.send("GET", path, headers: [("Prefer", "odata.maxpagesize=1")])
        #expect(second.rows.map { $0["code"]?.stringValue } == ["ZOE"])
        #expect(second.json?["@odata.nextLink"] == nil)

        let groups = client.send("GET", "/Shop/Orders?$apply="
                                 + Self.q("groupby((customer_code),aggregate(total with sum as sum))/filter(sum gt 8)")
                                 + "&$orderby=sum%20desc&$count=true&$top=5")
        #expect(groups.status == 200, "\(groups.text)")
        #expect(groups.rows.map { $0["customer_code"]?.stringValue } == ["ALFKI"])
        #expect(groups.rows.first?["sum"]?.numberText == "35.5")
        #expect(groups.json?["@odata.count"]?.numberText == "1")

        let sorted = client.send("GET", "/Shop/Orders?$apply=" + Self.q("groupby((customer_code),aggregate(total with sum as sum))")
                                 + "&$orderby=sum&$top=1")
        #expect(sorted.rows.map { $0["customer_code"]?.stringValue } == ["OBR"])
    }

    @Test("refusals: unsupported transformations -1003, malformed -1002, unknown fields 8309, wrong places and versions -1003")
    func refusals() throws {
        let client = try ODataClient()
        func code(_ path: String) -> (Int, String?) {
            let answer = client.send("GET", path)
            return (answer.status, answer.odataCode)
        }
        for unsupported in ["compute(score mul 2 as double)", "nest(aggregate(score with sum as s) as n)", "aggregate($count as n)",
                            "aggregate(score with custom.median as m)", "concat(identity,identity)",
                            "groupby((city),topcount(1,score))"] {
            #expect(code("/Shop/Customers?$apply=" + Self.q(unsupported)) == (400, "-1003"), "\(unsupported)")
        }
        for malformed in ["", "aggregate(score with sum)", "aggregate(score sum as s)", "groupby(city)", "groupby(())",
                          "filter(score eq)", "aggregate(score with sum as s,score with max as s)", "aggregate(score with sum as s",
                          "groupby((city),aggregate(score with sum as city))", "aggregate(name with sum as s)", "x(y)z(w)"] {
            #expect(code("/Shop/Customers?$apply=" + Self.q(malformed)) == (400, "-1002"), "\(malformed)")
        }
        #expect(code("/Shop/Customers?$apply=" + Self.q("groupby((nope))")) == (400, "8309"))
        #expect(code("/Shop/Customers?$apply=" + Self.q("aggregate(nope with max as m)")) == (400, "8309"))
        #expect(code("/Shop/Customers?$apply=" + Self.q("aggregate(score with sum as s)") + "&$select=s") == (400, "-1003"))
        #expect(code("/Shop/Customers('ALFKI')?$apply=" + Self.q("aggregate(score with sum as s)")) == (400, "-1003"))
        #expect(code("/Shop/Customers?$compute=" + Self.q("score mul 2 as d")) == (400, "-1003"))
        client.emulator.odataServerVersion = "22.0.0"
        #expect(code("/Shop/Customers?$apply=" + Self.q("aggregate(score with sum as s)")) == (400, "-1003"), "before 22.0.1")
        client.emulator.odataServerVersion = "26.0.1"
        #expect(code("/Shop/Customers?$apply=" + Self.q("aggregate(score with sum as s)")).0 == 200)
    }

    /// Random soups of `$apply` pieces never crash or hang the parser: each parses or throws ODataError.
    @Test func fuzzNeverCrashes() {
        var rng = SplitMix64(seed: 0xA991)
        let pieces = ["groupby(", "aggregate(", "filter(", "(", ")", ",", "/", " with ", " as ", "sum", "max", "countdistinct",
                      "city", "\"a b\"", "\"", "'", "''", "eq", "1", "$count", "compute(", "nest(", " ", "ä", "\u{0}", "%", "score"]
        for _ in 0..<3000 {
            var s = ""
            for _ in 0..<rng.below(30) { s += pieces[rng.below(pieces.count)] }
            do { _ = try ODataApply.parse(s) } catch is ODataError {} catch { Issue.record("unexpected error \(error) for \(s)") }
        }
        // Bounds: too long and too many steps are refused at once.
        #expect(throws: ODataError.self) { try ODataApply.parse(String(repeating: "filter(a eq 1)/", count: 600)) }
        #expect(throws: ODataError.self) { try ODataApply.parse(Array(repeating: "filter(a eq 1)", count: 17).joined(separator: "/")) }
        #expect((try? ODataApply.parse(Array(repeating: "filter(a eq 1)", count: 16).joined(separator: "/"))) != nil)
    }
}
