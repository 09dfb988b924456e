import Foundation
import Testing
@testable import SwiftFMEmulator

/// An OData read applies its `$filter` on a snapshot, after the emulator's state lock is released (as its rows are
/// written): other clients do not wait for it. Before, the filtering ran under the lock: one read with a 7 KB
/// `$filter` over 2,000 records of 1 KB held every other client, `productInfo` included, for 3.5 s (debug build).
@Suite struct ODataFilterOutsideLockTests {
    @Test func otherClientsAreAnsweredWhileACollectionIsFiltered() throws {
        let c = try ODataClient()
        let (read, moved, filtered) = c.answering(c.moveNULToParis(), at: \.odataWillFilter) {
            c.send("GET", "/Shop/Customers?$filter=city%20eq%20'Berlin'&$select=code&$count=true")
        }
        #expect(filtered, "the read never filtered")
        #expect(moved?.status == 204, "no other client was answered while the read filtered")
        // The read saw the records as they were when it was asked (NUL still in Berlin).
        #expect(read.status == 200)
        #expect(read.rows.compactMap { $0["code"]?.stringValue } == ["ALFKI", "NUL"])
        #expect(read.json?["@odata.count"]?.numberText == "2")
        #expect(c.send("GET", "/Shop/Customers?$filter=city%20eq%20'Berlin'&$select=code").rows.count == 1)
    }

    @Test func otherClientsAreAnsweredWhileACountIsFiltered() throws {
        let c = try ODataClient()
        let (count, moved, filtered) = c.answering(c.moveNULToParis(), at: \.odataWillFilter) {
            c.send("GET", "/Shop/Customers/$count?$filter=city%20eq%20'Berlin'")
        }
        #expect(filtered, "the count never filtered")
        #expect(moved?.status == 204, "no other client was answered while the count filtered")
        #expect(count.status == 200)
        #expect(count.text == "2")
        #expect(c.send("GET", "/Shop/Customers/$count?$filter=city%20eq%20'Berlin'").text == "1")
    }

    @Test func otherClientsAreAnsweredWhileABatchReadIsFiltered() throws {
        let c = try ODataClient()
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$filter=city%20eq%20'Berlin'&$select=code HTTP/1.1\r\n\r\n--b1--\r\n"
        let (batch, moved, filtered) = c.answering(c.moveNULToParis(), at: \.odataWillFilter) {
            c.send("POST", "/Shop/$batch", body: body, contentType: "multipart/mixed; boundary=b1")
        }
        #expect(filtered, "the batch's read never filtered")
        #expect(moved?.status == 204, "no other client was answered while the batch's read filtered")
        #expect(batch.status == 200)
        #expect(batch.text.contains(#""code":"NUL""#))
    }

    /// A malformed `$filter` is still refused at once (it is parsed under the lock, before any snapshot).
    @Test func aMalformedFilterIsStill400() throws {
        let c = try ODataClient()
        let bad = c.send("GET", "/Shop/Customers?$filter=city%20eq")
        #expect(bad.status == 400)
        #expect(c.send("GET", "/Shop/Customers/$count?$filter=nofield%20eq%201").status == 400)
    }
}
