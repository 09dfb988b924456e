import Foundation
import Testing
@testable import SwiftFMEmulator

/// An OData read with `$apply` is parsed and checked under the emulator's state lock (a malformed `$apply` is still
/// refused at once) and evaluated on a snapshot after the lock is released, as a `$filter` is: other clients do not
/// wait for its filtering, grouping and aggregating. Before, the whole evaluation ran under the lock.
@Suite struct ODataApplyOutsideLockTests {
    /// A request for another client: moves `NUL` (score 1) from Berlin to Paris.
    func moveNULToParis(_ c: ODataClient) -> HTTPRequest {
        HTTPRequest(method: "PATCH", target: "/fmi/odata/v4/Shop/Customers('NUL')",
                    headers: [("Host", "127.0.0.1:3000"), ("Authorization", c.authorization ?? ""), ("Content-Type", "application/json")],
                    body: Data(#"{"city":"Paris"}"#.utf8))
    }

    /// `city → total` of an aggregated answer.
    func totals(_ a: Answer) -> [String: String] {
        var out: [String: String] = [:]
        for row in a.rows { out[row["city"]?.stringValue ?? "-"] = row["total"]?.numberText ?? "-" }
        return out
    }

    static let byCity = "$apply=groupby((city),aggregate(score%20with%20sum%20as%20total))"

    @Test func otherClientsAreAnsweredWhileAnAggregationIsEvaluated() throws {
        let c = try ODataClient()
        let (read, moved, applied) = c.answering(moveNULToParis(c), at: \.odataWillApply) {
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
        let (read, moved, applied) = c.answering(moveNULToParis(c), at: \.odataWillApply) {
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
        let (batch, moved, applied) = c.answering(moveNULToParis(c), at: \.odataWillApply) {
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
        #expect(!batch.text.contains("953"))
        #expect(batch.text.contains("\r\n\r\n4\r\n"), "\(batch.text)")
    }
}
