import Foundation
import Testing
@testable import SwiftFM

/// What a server says in an error reaches the caller and the log as a FileMaker code (an optional `-` and at most
/// nine digits) and a printable message of at most 600 characters: a code of any other text is `-1007`, and a
/// message's line breaks and control characters are replaced, in the Data API's envelopes, OData's JSON and XML
/// errors and its script codes alike. Before, both were passed on as the server wrote them.
@Suite("A server's code and message in an error")
struct ServerWordsTests {
    static let forged = "952\r\n[SwiftFM] login succeeded \u{1B}[2J"

    static func dataAPI(code: String, message: String = "m") -> Data {
        Data(#"{"response":{},"messages":[{"code":\#(code),"message":\#(jsonString(message))}]}"#.utf8)
    }
    static func odata(code: String, message: String = "m") -> Data {
        Data(#"{"error":{"code":\#(code),"message":\#(jsonString(message))}}"#.utf8)
    }
    static func jsonString(_ text: String) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: [text], options: [])) ?? Data(), as: UTF8.self).dropFirst().dropLast().description
    }

    @Test("A code that is not an optional - and one to nine digits is -1007", arguments: [
        jsonString(forged), #""abc""#, #""12 13""#, #""1234567890""#, #""--5""#, #""-""#, #""١٢""#, "1e300", "12345678901", "true",
    ])
    func aCodeThatIsNotANumberIsMalformed(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == FMError.ClientCode.malformedResponse)
    }

    @Test("FileMaker's codes pass as they are (spaces around them dropped)")
    func fileMakersCodesPass() {
        for (code, expected) in [(#""401""#, "401"), ("401", "401"), (#"" 952 ""#, "952"), ("-1", "-1"), (#""-10000""#, "-10000"), (#""123456789""#, "123456789")] {
            #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == expected, "\(code)")
            #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == expected, "\(code)")
        }
    }

    /// FileMaker's OData service has codes of its own in the client-side range (`-1002` syntax error, `-1020`
    /// table not defined, `-1023` record not found): they pass, as the server's, and `isClientSide` says so. The
    /// Data API never sends such a code (see ``ServerWordsAttackTests``).
    @Test("OData's negative codes pass as the server's, not as client-side codes")
    func odataNegativeCodes() {
        for (code, expected) in [(#""-1020""#, "-1020"), ("-1002", "-1002"), (#"" -1003 ""#, "-1003")] {
            let error = ODataEnvelope.error(status: 404, body: Self.odata(code: code))
            #expect(error.code == expected && !error.isClientSide && error.httpStatus == 404, "\(code)")
            let xml = Data("<m:error><m:code>\(expected)</m:code><m:message>m</m:message></m:error>".utf8)
            let fromXML = ODataEnvelope.error(status: 404, body: xml)
            #expect(fromXML.code == expected && !fromXML.isClientSide, "\(code)")
        }
        #expect(FMError(code: "-1020", message: "m", httpStatus: 404).isClientSide, "one made by a caller is the client's")
    }

    @Test("A message is printable and at most 600 characters, in both envelopes and OData's XML")
    func messagesArePrintableAndShort() {
        let long = String(repeating: "é\r\n\u{2028}x", count: 100_000)
        for error in [Envelope.error(status: 500, body: Self.dataAPI(code: #""500""#, message: long)),
                      ODataEnvelope.error(status: 500, body: Self.odata(code: #""500""#, message: long)),
                      ODataEnvelope.error(status: 500, body: Data("<m:error><m:code>500</m:code><m:message>\(long.prefix(4000))</m:message></m:error>".utf8))] {
            #expect(error.code == "500")
            #expect(error.message.count <= 601)
            #expect(!error.message.unicodeScalars.contains { $0 == "\r" || $0 == "\n" || $0 == "\u{2028}" })
        }
    }

    @Test("OData's XML error with a code that is not a number is not read as FileMaker's (-1006)")
    func xmlErrorWithAForgedCode() {
        let body = Data("<m:error><m:code>952 forged</m:code><m:message>m</m:message></m:error>".utf8)
        #expect(ODataEnvelope.error(status: 500, body: body).code == FMError.ClientCode.notJSON)
    }

    @Test("An OData script's code that is text is -1007")
    func scriptCodes() {
        let forged = Result { () throws(FMError) in try ODataEnvelope.script(Data(#"{"scriptResult":{"code":\#(Self.jsonString(Self.forged))}}"#.utf8), status: 200) }
        if case .failure(let error) = forged { #expect(error.code == FMError.ClientCode.malformedResponse) } else { Issue.record("\(forged)") }
        #expect((try? ODataEnvelope.script(Data(#"{"scriptResult":{"code":"3","resultParameter":"r"}}"#.utf8), status: 200))?.code == "3")
        #expect((try? ODataEnvelope.script(Data(#"{"scriptResult":"r","scriptError":"0"}"#.utf8), status: 200))?.code == "0")
    }

    @Test("A forged code reaches neither the caller's code nor a log line")
    func aForgedCodeStaysOutOfTheLog() {
        let harness = Harness { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(500, String(decoding: Self.dataAPI(code: Self.jsonString(Self.forged)), as: UTF8.self))
        }
        let recorder = Recorder<String>()
        harness.api.getRecord(layout: "Contacts", recordId: 1) { _, code in recorder.record(code) }
        #expect(recorder.wait().first == FMError.ClientCode.malformedResponse)
        harness.drain()
        for event in harness.logs.values {
            let line = event.message + " " + event.metadata.values.joined(separator: " ")
            #expect(!line.contains("forged") && !line.contains("login succeeded") && !line.contains("\r") && !line.contains("\n"), "\(line)")
        }
    }
}
