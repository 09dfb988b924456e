import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// An OData read with `$apply` is parsed and checked under the emulator's state lock (a malformed `$apply` is still
/// refused at once) and evaluated on a snapshot after the lock is released, as a `$filter` is: other clients do not
/// wait for its filtering, grouping and aggregating. Before, the whole evaluation ran under the lock.
@Suite struct ODataApplyOutsideLockTests {
    /// `city → total` of an aggregated answer.
    func totals(_ a: Answer) -> [String: String] {
        var out: [String: String] = [:]
        for row in a.rows { out[row["city"]?.stringValue ?? "-"] = row["total"]?.numberText ?? "-" }
        return out
    }

    static let byCity = "$apply=groupby((city),aggregate(score%20with%20sum%20as%20total))"

    @Test func otherClientsAreAnsweredWhileAnAggregationIsEvaluated() throws {
        let c = try ODataClient()
        let (read, moved, applied) = c.answering(c.moveNULToParis(), at: \.odataWillApply) {
            c.send("GET", "/Shop/Customers?\(Self.byCity)&$count=true")
        }
        #expect(applied, "the $apply was never evaluated")
        #expect(moved?.status == 204, "no other client was answered while the $apply was evaluated")
        // The read saw the records as they were when it was asked (NUL still in Berlin).
        #expect(read.status == 200, "\(read.text)")
        #expect(totals(read) == ["Berlin": "6", "Dublin": "3.5", "Paris": "4"])
        #expect(read.json?["@odata.count"]?.numberText == "3")
        #expect(totals(c.send("GET", "/Shop/Customers?\(Self.byCity)")) == ["Berlin": "5", "Dublin": "3.5", "Paris": "5"])
    }

    @Test func otherClientsAreAnsweredWhileAnApplysFilterIsEvaluated() throws {
        let c = try ODataClient()
        let (read, moved, applied) = c.answering(c.moveNULToParis(), at: \.odataWillApply) {
            c.send("GET", "/Shop/Customers?$apply=filter(city%20eq%20'Berlin')&$select=code&$count=true")
        }
        #expect(applied, "the $apply was never evaluated")
        #expect(moved?.status == 204, "no other client was answered while the $apply was evaluated")
        #expect(read.status == 200, "\(read.text)")
        #expect(read.rows.compactMap { $0["code"]?.stringValue } == ["ALFKI", "NUL"])
        #expect(read.json?["@odata.count"]?.numberText == "2")
        #expect(c.send("GET", "/Shop/Customers?$apply=filter(city%20eq%20'Berlin')&$select=code").rows.count == 1)
    }

    @Test func otherClientsAreAnsweredWhileABatchsApplyIsEvaluated() throws {
        let c = try ODataClient()
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?\(Self.byCity) HTTP/1.1\r\n\r\n--b1--\r\n"
        let (batch, moved, applied) = c.answering(c.moveNULToParis(), at: \.odataWillApply) {
            c.send("POST", "/Shop/$batch", body: body, contentType: "multipart/mixed; boundary=b1")
        }
        #expect(applied, "the batch's $apply was never evaluated")
        #expect(moved?.status == 204, "no other client was answered while the batch's $apply was evaluated")
        #expect(batch.status == 200)
        #expect(batch.text.contains(#"{"city":"Berlin","total":6}"#), "\(batch.text)")
    }

    /// A malformed `$apply`, or one naming an unknown field, is refused at once: it is never evaluated.
    @Test func aMalformedApplyIsRefusedBeforeAnyEvaluation() throws {
        let c = try ODataClient()
        let applied = Locked(false)
        c.emulator.core.state.withLock { $0.odataWillApply = { applied.withLock { $0 = true } } }
        for apply in ["groupby(city)", "filter(score%20eq)", "aggregate(nope%20with%20max%20as%20m)", "groupby((nope))",
                      "filter(nope%20eq%201)/aggregate(score%20with%20sum%20as%20s)", "aggregate(name%20with%20sum%20as%20s)",
                      "aggregate(score%20with%20max%20as%20s)/groupby((city))", "groupby((city),aggregate(score%20with%20sum%20as%20city))"] {
            let a = c.send("GET", "/Shop/Customers?$apply=\(apply)")
            #expect(a.status == 400, "\(apply): \(a.text)")
            #expect(!applied.withLock { $0 }, "\(apply) was evaluated")
        }
        #expect(c.send("GET", "/Shop/Customers?\(Self.byCity)").status == 200)
        #expect(applied.withLock { $0 }, "the hook was never called")
        #expect(c.send("GET", "/Shop/Customers?$apply=aggregate(score%20with%20sum%20as%20s)&$select=s").odataCode == "-1003")
    }

    /// What only the records can tell (a column to sort by, once there are groups) is still answered as before,
    /// alone or in a batch.
    @Test func anErrorFoundWhileEvaluatingIsAnsweredAsBefore() throws {
        let c = try ODataClient()
        let unknown = c.send("GET", "/Shop/Customers?$apply=groupby((city))&$orderby=nope")
        #expect(unknown.status == 400)
        #expect(unknown.odataCode == "8309")
        #expect(unknown.odataMessage == "The field named 'nope' does not exist in a specified table (9)")
        // The request log tells what the client got.
        #expect(c.emulator.requestLog.last?.status == 400)
        // No group: nothing to sort.
        let none = c.send("GET", "/Shop/Customers?$apply=filter(city%20eq%20'Oslo')/groupby((city))&$orderby=nope")
        #expect(none.status == 200, "\(none.text)")
        #expect(none.rows.isEmpty)
        // In a batch: the part answers the error (not a 953), and the next part still runs with continue-on-error.
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$apply=groupby((city))&$orderby=nope HTTP/1.1\r\n\r\n"
            + "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers/$count HTTP/1.1\r\n\r\n--b1--\r\n"
        let batch = c.send("POST", "/Shop/$batch", body: body, headers: [("Prefer", "odata.continue-on-error")],
                           contentType: "multipart/mixed; boundary=b1")
        #expect(batch.status == 200)
        #expect(batch.text.contains("HTTP/1.1 400 Bad Request"), "\(batch.text)")
        #expect(batch.text.contains(#""code":"8309""#))
        #expect(!batch.text.contains(#""code":"953""#))   // not "953" alone: the batch's random boundary may hold it
        #expect(batch.text.contains("\r\n\r\n4\r\n"), "\(batch.text)")
    }

    /// The check under the lock refuses only what the evaluation (run as it ran under the lock before) refuses first, with
    /// the same error: random `$apply`s of steps right and wrong, with options right and wrong, over the Shop records,
    /// once with a text in a number field (a `sum` of it fails only when it meets it).
    @Test(arguments: [false, true]) func theCheckRefusesWhatTheEvaluationRefusesFirst(textInANumberField: Bool) throws {
        let c = try ODataClient()
        let steps = ["filter(score ge 3)", "filter(nope eq 1)", "filter(total gt 8)", "filter(city eq 'Oslo')", "filter(c gt 1)",
                     "aggregate(score with sum as total)", "aggregate(score with max as m,nope with min as n)",
                     "aggregate(name with sum as s)", "aggregate(total with average as a)", "aggregate(city with countdistinct as c)",
                     "aggregate(score with sum as s,name with average as t)", "aggregate(score with min as m,city with max as x)",
                     "groupby((city))", "groupby((nope))", "groupby((city),aggregate(score with sum as total))",
                     "groupby((city),aggregate(nope with max as x))", "groupby((city),aggregate(score with sum as city))",
                     "groupby((city,name),aggregate(name with sum as s))"]
        let options = ["", "select=s", "top=-1", "orderby=nope", "orderby=total desc", "count=maybe", "skiptoken=1", "filter=x eq 1",
                       "count=true&top=1", "expand=Orders"]
        var rng = SplitMix64(seed: textInANumberField ? 0xA9917 : 0xA9918)
        var refusedByTheCheck = 0, refusedLater = 0
        try c.emulator.core.state.withLock { s in
            if textInANumberField {
                s.tables["customers"]?.records[2]?.values["score"] = [.text("many")]
            }
            let set = try #require(s.odataSet("Customers"))
            for _ in 0..<2_000 {
                let text = (0...rng.below(3)).map { _ in steps[rng.below(steps.count)] }.joined(separator: "/")
                var ctx = ODataContext(request: HTTPRequest(method: "GET", target: "/"), now: Date())
                ctx.options["apply"] = text
                for pair in options[rng.below(options.count)].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    ctx.options[kv[0]] = kv[1]
                }
                let apply = try ODataApply.parse(text)
                // As it was evaluated under the lock before: the steps, then the aggregated answer.
                var evaluated: ODataError?
                do {
                    let (_, rows) = try s.odataApplied(ODataApplyPlan(set: set, apply: apply, aggregates: false))
                    if let rows { _ = try s.odataAggregatedAnswer(set, rows: rows, ctx) }
                } catch let e as ODataError {
                    evaluated = e
                }
                do {
                    try s.odataCheckApply(apply, set, ctx)
                    if evaluated != nil { refusedLater += 1 }
                } catch let e as ODataError {
                    refusedByTheCheck += 1
                    #expect(e == evaluated, "\(text) \(ctx.options)")
                }
            }
        }
        // Both kinds occur: the test compares something.
        #expect(refusedByTheCheck > 100)
        #expect(refusedLater > 10)
    }
}
