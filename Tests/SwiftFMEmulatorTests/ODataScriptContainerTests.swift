import Foundation
import Testing
@testable import SwiftFMEmulator

/// OData scripts (`Script.{name}`) and containers (`…/{field}/$value`, binary and base64 uploads).
@Suite struct ODataScriptContainerTests {
    @Test(arguments: Via.allCases) func scripts(via: Via) throws {
        let c = try ODataClient(via: via)
        let plain = c.send("POST", "/Shop/Script.Hello")
        #expect(plain.status == 200)
        #expect(plain.json == .object([("scriptResult", .object([("code", .number(0)), ("resultParameter", .string("Hello World"))]))]))
        let echo = c.send("POST", "/Shop/Script.Echo", body: #"{"scriptParameterValue":"O'Brien"}"#)
        #expect(echo.json?["scriptResult"]?["resultParameter"]?.stringValue == "O'Brien")
        let number = c.send("POST", "/Shop/Customers/Script.Echo", body: #"{"scriptParameterValue":42}"#)
        #expect(number.json?["scriptResult"]?["resultParameter"]?.stringValue == "42")
        let object = c.send("POST", "/Shop/Customers('ALFKI')/Script.Echo", body: #"{"scriptParameterValue":{"a":[1,"b"]}}"#)
        #expect(object.json?["scriptResult"]?["resultParameter"]?.stringValue == #"{"a":[1,"b"]}"#)
        let failed = c.send("POST", "/Shop/Script.Fail")
        #expect(failed.status == 200 && failed.json?["scriptResult"]?["code"] == .number(3))
        // `resultParameter` is always there (empty without Exit Script's result): clients tell the nested
        // envelope from the flat one by it (fms-odata-py ignored the failure without it).
        #expect(failed.json?["scriptResult"]?["resultParameter"]?.stringValue == "")
        // A name with spaces, percent-encoded; a registered closure.
        c.emulator.registerScript("Say Hi") { invocation in .result("hi \(invocation.parameter ?? "-")") }
        #expect(c.send("POST", "/Shop/Script.Say%20Hi", body: #"{"scriptParameterValue":"you"}"#)
            .json?["scriptResult"]?["resultParameter"]?.stringValue == "hi you")
        #expect(c.send("POST", "/Shop/Script.FMSID:3").json?["scriptResult"]?["resultParameter"]?.stringValue == "Hello World")

        let missing = c.send("POST", "/Shop/Script.Nope")
        #expect(missing.status == 404 && missing.odataCode == "104")
        #expect(c.send("POST", "/Shop/Script.a%26b").odataCode == "-1003")
        #expect(c.send("POST", "/Shop/Script.Echo", body: #"{"parameter":"x"}"#).status == 400)
        #expect(c.send("GET", "/Shop/Script.Echo").status == 405)
    }

    @Test(arguments: Via.allCases) func binaryUploadAndDownload(via: Via) throws {
        let c = try ODataClient(via: via)
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 300))
        let up = c.sendData("PATCH", "/Shop/Customers('ALFKI')/photo", body: png,
                            headers: [("Content-Type", "image/png"), ("Content-Disposition", "inline; filename=ALFKI.png")])
        #expect(up.status == 204, "\(up.text)")
        let down = c.send("GET", "/Shop/Customers('ALFKI')/photo/$value")
        #expect(down.status == 200 && down.body == png)
        #expect(down.header("Content-Type") == "image/png")
        #expect(down.header("Content-Disposition") == #"attachment; filename="ALFKI.png""#)
        // The Data API sees the same container.
        try c.harness.login()
        let record = c.harness.send("GET", "\(c.harness.base)/layouts/Customers/records/1")
        #expect(record.data.first?["fieldData"]?["photo"]?.stringValue?.contains("/Streaming_SSL/") == true)
        // Quoted and RFC 5987 names; the type sniffed when not given.
        let pdf = Data("%PDF-1.4 tiny".utf8)
        #expect(c.sendData("PATCH", "/Shop/Customers('OBR')/photo", body: pdf,
                           headers: [("Content-Disposition", "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf")]).status == 204)
        let pdfDown = c.send("GET", "/Shop/Customers('OBR')/photo/$value")
        #expect(pdfDown.header("Content-Type") == "application/pdf" && pdfDown.header("Content-Disposition")?.contains("résumé.pdf") == true)
        // Octet-stream quirk (off by default).
        #expect(c.send("GET", "/Shop/Customers('ALFKI')/photo/$value", headers: [("Accept", "application/octet-stream")]).body == png)
        c.emulator.odataOctetStreamQuirk = true
        #expect(c.send("GET", "/Shop/Customers('ALFKI')/photo/$value", headers: [("Accept", "application/octet-stream")]).text == "ALFKI.png")
        // Empty container; not a container.
        #expect(c.send("GET", "/Shop/Customers('ZOE')/photo/$value").status == 404)
        #expect(c.sendData("PATCH", "/Shop/Customers('ZOE')/name", body: pdf, headers: []).status == 400)
    }

    @Test func base64ContainersInJSON() throws {
        let c = try ODataClient()
        let gif = Data([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 2, 3])
        let created = c.send("POST", "/Shop/Customers", body: #"""
            {"code":"PIC","photo":"\#(gif.base64EncodedString())","photo@com.filemaker.odata.Filename":"p.gif"}
            """#)
        #expect(created.status == 201, "\(created.text)")
        let down = c.send("GET", "/Shop/Customers('PIC')/photo/$value")
        #expect(down.body == gif && down.header("Content-Type") == "image/gif" && down.header("Content-Disposition")?.contains("p.gif") == true)
        // Selected explicitly, a container reads as base64.
        #expect(c.send("GET", "/Shop/Customers('PIC')?$select=photo").json?["photo"]?.stringValue == gif.base64EncodedString())
        // Without a name: Untitled.<ext>; null clears.
        #expect(c.send("PATCH", "/Shop/Customers('PIC')", body: #"{"photo":"\#(Data([0xFF, 0xD8, 0xFF, 0]).base64EncodedString())"}"#).status == 204)
        #expect(c.send("GET", "/Shop/Customers('PIC')/photo/$value").header("Content-Disposition")?.contains("Untitled.jpg") == true)
        #expect(c.send("PATCH", "/Shop/Customers('PIC')", body: #"{"photo":null}"#).status == 204)
        #expect(c.send("GET", "/Shop/Customers('PIC')/photo/$value").status == 404)
        #expect(c.send("PATCH", "/Shop/Customers('PIC')", body: #"{"photo":"***"}"#).status == 400)
    }
}
