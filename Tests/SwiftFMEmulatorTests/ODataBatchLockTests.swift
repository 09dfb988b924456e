import Foundation
import Testing
@testable import SwiftFMEmulator

/// A `$batch` takes the emulator's state lock part by part, and its reads are filtered and written after it is
/// released: other clients are answered while it runs. Before, a batch ran all its parts under the lock: one read
/// with a 7 KB `$filter` over 2,000 records of 1 KB held `productInfo` for 3.5 s (debug build), and a `$batch` of
/// 1,000 such reads (a 7 MB body) would have held every other client for about 1.5 hours.
@Suite struct ODataBatchLockTests {
    @Test
    func otherClientsAreAnsweredWhileABatchReadIsWritten() throws {
        let c = try ODataClient()
        let other = HTTPRequest(method: "GET", target: "/fmi/odata/v4/Shop/Orders/$count",
                                headers: [("Host", "127.0.0.1:3000"), ("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString())])
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$select=code HTTP/1.1\r\n\r\n--b1--\r\n"
        let (batch, answered, wrote) = c.answering(other) {
            c.send("POST", "/Shop/$batch", body: body, contentType: "multipart/mixed; boundary=b1")
        }
        #expect(batch.status == 200)
        #expect(wrote, "the batch's rows were never written")
        #expect(answered?.status == 200, "no other client was answered while the batch ran")
    }

    /// A batch answered through a fault (which routes the request whole, under the lock) still runs its parts.
    @Test func aBatchUnderAFaultStillRunsItsParts() throws {
        let c = try ODataClient()
        c.emulator.inject(.closeMidBody, matching: "$batch")
        let body = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers?$select=code&$filter=city%20eq%20'Paris' HTTP/1.1\r\n\r\n--b1--\r\n"
        let batch = c.send("POST", "/Shop/$batch", body: body, contentType: "multipart/mixed; boundary=b1")
        #expect(batch.status == 200)
        #expect(batch.text.contains("HTTP/1.1 200 OK"))
        #expect(batch.text.contains(#""code":"ZOE""#))
    }
}
