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
}
