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
        for (code, expected) in [(#""401""#, "401"), ("401", "401"), (#"" 952 ""#, "952"), (#""-1020""#, "-1020"), ("-1020", "-1020"), (#""123456789""#, "123456789")] {
            #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == expected, "\(code)")
            #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == expected, "\(code)")
        }
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
