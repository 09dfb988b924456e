import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData `$batch`: multipart framing (CRLF or LF; absolute, path-absolute and relative URLs), reads, and
/// change sets that are atomic.
@Suite struct ODataBatchTests {
    /// The parts of a multipart answer: (status, body) of each `application/http` part, change sets flattened.
    func statuses(_ a: Answer) throws -> [Int] {
        let type = try #require(a.header("Content-Type"))
        #expect(type.hasPrefix("multipart/mixed; boundary=batch_"))
        return a.text.components(separatedBy: "\r\n").compactMap { line -> Int? in
            guard line.hasPrefix("HTTP/1.1 ") else { return nil }
            return Int(line.dropFirst(9).prefix(3))
        }
    }

    func batch(_ c: ODataClient, _ body: String, lf: Bool = false, prefer: String? = nil) -> Answer {
        let text = lf ? body : body.replacingOccurrences(of: "\n", with: "\r\n")
        var headers: [(name: String, value: String)] = []
        if let prefer { headers.append(("Prefer", prefer)) }
        return c.send("POST", "/Shop/$batch", body: text, headers: headers, contentType: "multipart/mixed; boundary=b1")
    }

    @Test(arguments: Via.allCases) func changeSetThenRead(via: Via) throws {
        let c = try ODataClient(via: via)
        let body = """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http
        Content-Transfer-Encoding: binary
        Content-ID: 1

        POST \(c.harness.origin)/fmi/odata/v4/Shop/Customers HTTP/1.1
        Content-Type: application/json
        Content-Length: 30

        {"code":"B1","name":"Batched"}
        --cs1
        Content-Type: application/http
        Content-ID: 2

        PATCH /fmi/odata/v4/Shop/Customers('ALFKI') HTTP/1.1
        Content-Type: application/json

        {"city":"Hamburg"}
        --cs1
        Content-Type: application/http
        Content-ID: 3

        DELETE Orders(3) HTTP/1.1


        --cs1--
        --b1
        Content-Type: application/http

        GET Customers?$filter=code%20eq%20'B1'&$select=name HTTP/1.1
        Accept: application/json


        --b1--
        """
        let a = batch(c, body)
        #expect(a.status == 200, "\(a.text)")
        #expect(try statuses(a) == [201, 204, 204, 200])
        #expect(a.text.contains("Content-Type: multipart/mixed; boundary=changeset_"))
        #expect(a.text.contains("Content-ID: 3"))
        #expect(a.text.contains(#""name":"Batched""#))
        #expect(c.send("GET", "/Shop/Customers('ALFKI')").json?["city"]?.stringValue == "Hamburg")
        #expect(c.emulator.recordCount(inTable: "Orders") == 2)
    }

    /// A failing request rolls its whole change set back; the batch stops there unless asked to go on.
    @Test func changeSetsAreAtomic() throws {
        let c = try ODataClient()
        let body = """
        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http

        POST Customers HTTP/1.1
        Content-Type: application/json

        {"code":"NEW1"}
        --cs1
        Content-Type: application/http

        PATCH Customers('OBR') HTTP/1.1
        Content-Type: application/json

        {"city":"Cork"}
        --cs1
        Content-Type: application/http

        POST Customers HTTP/1.1
        Content-Type: application/json

        {"code":"ALFKI"}
        --cs1--
        --b1
        Content-Type: application/http

        GET Customers/$count HTTP/1.1

        --b1--
        """
        let before = c.emulator.recordCount(inTable: "Customers")
        let stopped = batch(c, body, lf: true)
        #expect(stopped.status == 200)
        #expect(try statuses(stopped) == [400])
        #expect(stopped.text.contains(#""code":"504""#))
        #expect(c.emulator.recordCount(inTable: "Customers") == before)
        #expect(c.send("GET", "/Shop/Customers('OBR')").json?["city"]?.stringValue == "Dublin")
        #expect(c.send("GET", "/Shop/Customers('NEW1')").status == 404)

        let goOn = batch(c, body, lf: true, prefer: "odata.continue-on-error")
        #expect(try statuses(goOn) == [400, 200])
        #expect(goOn.text.contains("\r\n\r\n\(before)\r\n"))
    }

    @Test func framingErrors() throws {
        let c = try ODataClient()
        #expect(c.send("POST", "/Shop/$batch", body: "x", contentType: "application/json").odataCode == "-1015")
        #expect(batch(c, "--b1\nContent-Type: application/http\n\nGET Customers HTTP/1.1\n").odataCode == "-1015")
        #expect(batch(c, "--b1\nContent-Type: text/plain\n\nhello\n--b1--\n").odataCode == "-1033")
        #expect(batch(c, "--b1\nContent-Type: application/http\n\nFETCH Customers HTTP/1.1\n\n--b1--\n").odataCode == "-1033")
        let nested = batch(c, "--b1\nContent-Type: application/http\n\nPOST $batch HTTP/1.1\n\n--b1--\n")
        #expect(try statuses(nested) == [400])
        #expect(c.send("GET", "/Shop/$batch").status == 405)
        let many = "--b1\n" + Array(repeating: "Content-Type: application/http\n\nGET Customers/$count HTTP/1.1\n\n", count: 1001)
            .joined(separator: "--b1\n") + "--b1--\n"
        #expect(batch(c, many).status == 400)
    }
}
