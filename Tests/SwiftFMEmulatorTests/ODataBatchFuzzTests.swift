import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// A hostile `$batch` request: the emulator answers a multipart 200 or a 4xx in FileMaker's OData error shape,
/// never crashes, hangs or wedges its state.
@Suite struct ODataBatchFuzzTests {
    static let tokens = ["--b1", "--b1--", "--cs", "--cs--", "--", "", " ", "\t", "--b1 ", "--b1x", "--cs--x",
                         "Content-Type: application/http", "content-type: APPLICATION/HTTP", "Content-Type: multipart/mixed; boundary=cs",
                         "Content-Type: multipart/mixed; boundary=\"cs\"", "Content-Type: multipart/mixed; boundary=b1",
                         "Content-Type: multipart/mixed; boundary=", "Content-Type: multipart/mixed", "Content-Type: text/plain",
                         "Content-ID: 1", "Content-ID: $1", "Content-Transfer-Encoding: binary", ":", "a:b",
                         "GET Customers HTTP/1.1", "GET Customers/$count HTTP/1.1", "GET Customers('ALFKI')", "GET $metadata HTTP/1.1",
                         "GET http://h/fmi/odata/v4/Shop/Orders HTTP/1.1", "GET http://h HTTP/1.1", "GET /fmi/odata/v4/Other/x HTTP/1.1",
                         "POST Customers HTTP/1.1", "PATCH Customers('ALFKI') HTTP/1.1", "DELETE Orders(3) HTTP/1.1", "DELETE Orders(x) HTTP/1.1",
                         "POST $batch HTTP/1.1", "POST /fmi/odata/v4/Shop/%24batch HTTP/1.1", "GET ../../$batch HTTP/1.1",
                         "GET Customers?$filter=(((( HTTP/1.1", "GET Customers?$top=-1 HTTP/1.1", "FETCH x HTTP/1.1", "GET", "GET a b c d",
                         "Content-Type: application/json", "Content-Length: 99999999999", "Accept: application/json",
                         #"{"code":"Z","name":"Fuzz"}"#, #"{"city":"Paris"}"#, "{", "[1]", "null", "ä", "\u{FEFF}", "\u{301}", "\r"]

    static func soup(_ rng: inout SplitMix64) -> String {
        var text = ""
        for _ in 0..<rng.below(50) {
            text += tokens[rng.below(tokens.count)]
            if rng.chance(75) { text += rng.chance(70) ? "\r\n" : "\n" }
        }
        return text
    }

    static let types = ["multipart/mixed; boundary=b1", "multipart/mixed;boundary=\"b1\"", "Multipart/Mixed; Boundary=b1",
                        "multipart/mixed", "multipart/mixed; boundary=", "multipart/mixed; boundary=\"\"", "application/json"]

    @Test func parserFuzzNeverCrashes() {
        var rng = SplitMix64(seed: 0xB47C4)
        for _ in 0..<3000 {
            let text = Self.soup(&rng)
            let type = Self.types[rng.below(Self.types.count)]
            do {
                let parts = try ODataBatchParser.parse(Data(text.utf8), contentType: type)
                #expect(!parts.isEmpty, "\(text.debugDescription)")
            } catch let error as ODataError {
                #expect(error.status == 400 && !error.code.isEmpty, "\(text.debugDescription)")
            } catch {
                Issue.record("unexpected error \(error) for \(text.debugDescription)")
            }
        }
    }

    /// A 200 multipart answer whose parts have three-digit statuses, or a 4xx with an OData error body.
    static func checkAnswer(_ a: Answer, _ text: String) {
        if a.status == 200 {
            let type = a.header("Content-Type") ?? ""
            #expect(type.hasPrefix("multipart/mixed; boundary=batch_"), "\(text.debugDescription)")
            #expect(a.text.hasSuffix("--\r\n"), "\(text.debugDescription)")
            for line in a.text.components(separatedBy: "\r\n") where line.hasPrefix("HTTP/1.1 ") {
                #expect(Int(line.dropFirst(9).prefix(3)).map { (100...599).contains($0) } == true, "\(line) for \(text.debugDescription)")
            }
        } else {
            #expect((400...499).contains(a.status), "status \(a.status) for \(text.debugDescription)")
            #expect(a.odataCode?.isEmpty == false, "\(a.text) for \(text.debugDescription)")
        }
    }

    @Test(arguments: Via.allCases) func emulatorAnswersHostileBatches(via: Via) throws {
        let c = try ODataClient(via: via)
        var rng = SplitMix64(seed: via == .handler ? 0xE3A1 : 0xE3A2)
        for _ in 0..<(via == .handler ? 600 : 60) {
            let text = Self.soup(&rng)
            let type = Self.types[rng.below(Self.types.count)]
            Self.checkAnswer(c.sendData("POST", "/Shop/$batch", body: Data(text.utf8), headers: [("Content-Type", type)]), text)
        }
        // Still serving.
        #expect(c.send("GET", "/Shop/Customers/$count").status == 200)
    }

    @Test func bodiesPassAsSent() throws {
        let body = "{\n  \"city\": \"Paris\"\n}"
        let text = "--b1\r\nContent-Type: application/http\r\n\r\nPATCH Customers('ALFKI') HTTP/1.1\r\nContent-Type: application/json\r\n\r\n"
            + body + "\r\n\r\n--b1--\r\n"
        let parts = try ODataBatchParser.parse(Data(text.utf8), contentType: "multipart/mixed; boundary=b1")
        guard case .request(let request)? = parts.first else {
            Issue.record("not one request: \(parts)")
            return
        }
        #expect(parts.count == 1)
        #expect(String(decoding: request.body, as: UTF8.self) == body)
        #expect(request.method == "PATCH" && request.url == "Customers('ALFKI')")
        #expect(ODataBatchParser.header(request.headers, "content-type") == "application/json")
    }

    @Test func headerLinesAreBounded() throws {
        let c = try ODataClient()
        let many = String(repeating: "X-Pad: 1\r\n", count: 100)   // ODataBatchParser.maxHeaderLines
        let inPart = "--b1\r\nContent-Type: application/http\r\n" + many + "\r\nGET Customers HTTP/1.1\r\n\r\n--b1--\r\n"
        let inRequest = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n" + many + "X-Pad: 1\r\n\r\n--b1--\r\n"
        let fits = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n" + many + "\r\n--b1--\r\n"
        for text in [inPart, inRequest] {
            let a = c.sendData("POST", "/Shop/$batch", body: Data(text.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
            #expect(a.status == 400 && a.odataCode == "-1033", "\(a.text)")
        }
        let a = c.sendData("POST", "/Shop/$batch", body: Data(fits.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
        #expect(a.status == 200, "\(a.text)")
    }

    /// Many MiB of short lines: answered (16 MiB of blank lines took 13 s and 0.9 GB here as a string per line, 1.5 s
    /// now); 8 MiB of parts refused past the 1000th request.
    @Test(arguments: Via.allCases) func largeBodiesOfShortLines(via: Via) throws {
        let c = try ODataClient(via: via)
        let blank = "--b1\r\nContent-Type: application/http\r\n\r\n" + String(repeating: "\n", count: 16 << 20) + "GET Customers/$count HTTP/1.1\r\n\r\n--b1--\r\n"
        let a = c.sendData("POST", "/Shop/$batch", body: Data(blank.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
        #expect(a.status == 200)
        #expect(a.text.contains("HTTP/1.1 200 OK"))
        let part = "--b1\nContent-Type: application/http\n\nGET Customers/$count\n"
        let parts = String(repeating: part, count: (8 << 20) / part.utf8.count) + "--b1--\n"
        let b = c.sendData("POST", "/Shop/$batch", body: Data(parts.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
        #expect(b.status == 400 && b.odataCode == "-1002", "\(b.text.prefix(200))")
    }

    /// A bare CR inside a header line (here in `Host`, which the `Location` of a created record echoes) is refused,
    /// never written into the multipart answer as a line break of its own.
    @Test func bareCarriageReturnInHeaders() throws {
        let c = try ODataClient()
        for header in ["Host: a\rX-Injected: 1", "X-Pad: 1\r2"] {
            let text = "--b1\r\nContent-Type: application/http\r\n\r\nPOST Customers HTTP/1.1\r\n" + header
                + "\r\nContent-Type: application/json\r\n\r\n{\"code\":\"CR\",\"name\":\"Bare\"}\r\n--b1--\r\n"
            let a = c.sendData("POST", "/Shop/$batch", body: Data(text.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
            #expect(a.status == 400 && a.odataCode == "-1033", "\(a.text.debugDescription)")
            #expect(!a.text.replacingOccurrences(of: "\r\n", with: "").contains("\r"), "\(a.text.debugDescription)")
        }
        let part = "--b1\r\nContent-Type: application/http\rX: 1\r\n\r\nGET Customers HTTP/1.1\r\n\r\n--b1--\r\n"
        #expect(c.sendData("POST", "/Shop/$batch", body: Data(part.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")]).odataCode == "-1033")
    }

    static let requests: [(line: String, body: String?)] = [
        ("GET Customers HTTP/1.1", nil), ("GET Customers('ALFKI') HTTP/1.1", nil), ("GET Customers/$count HTTP/1.1", nil),
        ("GET Orders?$filter=id%20gt%201&$top=2 HTTP/1.1", nil), ("GET Customers?$top=x HTTP/1.1", nil), ("GET Nope HTTP/1.1", nil),
        ("POST Customers HTTP/1.1", #"{"code":"Z","name":"Fuzz"}"#), ("POST Customers HTTP/1.1", #"{"nope":1}"#), ("POST Customers HTTP/1.1", "{"),
        ("PATCH Customers('ALFKI') HTTP/1.1", #"{"city":"Lyon"}"#), ("PATCH Customers('NOPE') HTTP/1.1", #"{"city":"Lyon"}"#),
        ("DELETE Orders(3) HTTP/1.1", nil), ("DELETE Orders(999) HTTP/1.1", nil), ("POST $batch HTTP/1.1", nil),
        ("GET http://h/fmi/odata/v4/Shop/Orders HTTP/1.1", nil), ("GET /fmi/odata/v4/Other/Orders HTTP/1.1", nil),
    ]

    static func request(_ rng: inout SplitMix64, id: Int) -> [String] {
        let (line, body) = requests[rng.below(requests.count)]
        var lines = ["Content-Type: application/http", "Content-ID: \(id)", "", line]
        if let body { lines += ["Content-Type: application/json", "", body] } else { lines += [""] }
        return lines
    }

    /// A well-formed batch of reads and change sets, then a few line edits.
    static func mutated(_ rng: inout SplitMix64) -> String {
        var lines: [String] = []
        var id = 0
        for _ in 0..<(1 + rng.below(4)) {
            if rng.chance(35) {
                lines += ["--b1", "Content-Type: multipart/mixed; boundary=cs", ""]
                for _ in 0..<(1 + rng.below(3)) {
                    id += 1
                    lines += ["--cs"] + request(&rng, id: id)
                }
                lines.append("--cs--")
            } else {
                id += 1
                lines += ["--b1"] + request(&rng, id: id)
            }
        }
        lines.append("--b1--")
        for _ in 0..<rng.below(3) {
            let at = rng.below(lines.count)
            switch rng.below(3) {
            case 0: lines.remove(at: at)
            case 1: lines.insert(tokens[rng.below(tokens.count)], at: at)
            default: lines.insert(lines[at], at: at)
            }
        }
        return lines.joined(separator: rng.chance(80) ? "\r\n" : "\n") + "\r\n"
    }

    @Test(arguments: Via.allCases) func emulatorAnswersMutatedBatches(via: Via) throws {
        let c = try ODataClient(via: via)
        var rng = SplitMix64(seed: via == .handler ? 0x3D17 : 0x3D18)
        var answered = 0
        var prefer = false
        for _ in 0..<(via == .handler ? 400 : 40) {
            let text = Self.mutated(&rng)
            prefer.toggle()
            let headers: [(name: String, value: String)] = [("Content-Type", "multipart/mixed; boundary=b1")]
                + (prefer ? [("Prefer", "odata.continue-on-error")] : [])
            let a = c.sendData("POST", "/Shop/$batch", body: Data(text.utf8), headers: headers)
            Self.checkAnswer(a, text)
            if a.status == 200 { answered += 1 }
        }
        // Most batches are well formed enough to run: the executor was exercised, not only the framing.
        #expect(answered * 2 > (via == .handler ? 400 : 40), "\(answered) answered")
        #expect(c.send("GET", "/Shop/Customers/$count").status == 200)
    }

    /// A sub-response's body reaches the multipart answer byte for byte (a container's `$value` is not UTF-8).
    @Test func binarySubResponsesPassAsTheyAre() throws {
        let c = try ODataClient()
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0xFF, 0xFE, 0x00, 0x80])
        #expect(c.sendData("PATCH", "/Shop/Customers('ALFKI')/photo", body: png,
                           headers: [("Content-Type", "image/png"), ("Content-Disposition", "inline; filename=a.png")]).status == 204)
        let text = "--b1\r\nContent-Type: application/http\r\n\r\nGET Customers('ALFKI')/photo/$value HTTP/1.1\r\n\r\n--b1--\r\n"
        let a = c.sendData("POST", "/Shop/$batch", body: Data(text.utf8), headers: [("Content-Type", "multipart/mixed; boundary=b1")])
        #expect(a.status == 200)
        #expect(a.text.contains("HTTP/1.1 200 OK"))
        #expect(a.body.range(of: Data("\r\n\r\n".utf8) + png + Data("\r\n--batch_".utf8)) != nil, "\(a.text.debugDescription)")
    }
}
