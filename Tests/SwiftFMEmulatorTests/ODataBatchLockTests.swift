import Foundation
import Testing
@testable import SwiftFMEmulator

/// A `$batch` runs all its parts under the emulator's state lock, its reads' filtering and writing included:
/// while it runs, no other client is answered. One read with a 7 KB `$filter` over 2,000 records of 1 KB held
/// `productInfo` for 3.5 s (debug build); a `$batch` of 1,000 such reads (a 7 MB body) would hold every other
/// client for about 1.5 hours. ``Emulator/maxAnswerBytes`` bounds what a batch answers, not how long it works.
@Suite struct ODataBatchLockTests {
    @Test(.disabled("a $batch holds the state lock for all its parts (found by attack9, not fixed): other clients wait for the whole batch"))
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
}
