import Foundation
import Testing
@testable import SwiftFMEmulator

/// The conformance pairs of WIRE.md §15, each run twice: against the handler directly, and over real
/// HTTP with URLSession (not the SwiftFM client) against the emulator listening on loopback.
@Suite struct ConformancePairsTests {
    @Test(arguments: Via.allCases) func pair01ProductInfo(_ via: Via) throws {
        let h = try Harness(via: via)
        let a = h.send("GET", "/fmi/data/vLatest/productInfo", bearer: false, contentType: nil)
        #expect(a.status == 200)
        #expect(a.code == "0")
        #expect(a.message == "OK")
        let info = a.response["productInfo"]
        #expect(info?["name"]?.stringValue == "FileMaker Data API Engine")
        #expect(info?["dateFormat"]?.stringValue == "MM/dd/yyyy")
        #expect(info?["timeFormat"]?.stringValue == "HH:mm:ss")
        #expect(info?["timeStampFormat"]?.stringValue == "MM/dd/yyyy HH:mm:ss")
        #expect(a.header("Content-Type") == "application/json")
    }

    @Test(arguments: Via.allCases) func pair02Databases(_ via: Via) throws {
        let h = try Harness(via: via)
        let a = h.send("GET", "/fmi/data/vLatest/databases", bearer: false, contentType: nil)
        #expect(a.status == 200)
        #expect(a.code == "0")
        #expect(a.response["databases"]?.arrayValue?.first?["name"]?.stringValue == "Contacts")
    }

    @Test(arguments: Via.allCases) func pair03Login(_ via: Via) throws {
        let h = try Harness(via: via)
        let a = h.loginRequest()
        #expect(a.status == 200)
        #expect(a.code == "0")
        let header = try #require(a.header("X-FM-Data-Access-Token"))
        #expect(header.count == 52)
        #expect(header.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(a.response["token"]?.stringValue == header)
    }

    @Test(arguments: Via.allCases) func pair04WrongPassword(_ via: Via) throws {
        let h = try Harness(via: via)
        let a = h.loginRequest(password: "wrong")
        #expect(a.status == 401)
        #expect(a.code == "212")
        #expect(a.isEmptyResponse)
    }

    @Test(arguments: Via.allCases) func pair05NoAuthorization(_ via: Via) throws {
        let h = try Harness(via: via)
        let a = h.send("POST", "\(h.base)/sessions", body: "{}", bearer: false)
        #expect(a.status == 401)
        #expect(a.code == "10")
        #expect(a.isEmptyResponse)
    }

    @Test(arguments: Via.allCases) func pair06WrongContentType(_ via: Via) throws {
        let h = try Harness(via: via)
        #expect(h.loginRequest(contentType: "text/plain").status == 415)
    }

    @Test(arguments: Via.allCases) func pair07Layouts(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts")
        #expect(a.status == 200)
        let layouts = try #require(a.response["layouts"]?.arrayValue)
        let folder = try #require(layouts.first { $0["isFolder"]?.boolValue == true })
        #expect(folder["name"]?.stringValue == "Folder A")
        let inner = try #require(folder["folderLayoutNames"]?.arrayValue)
        #expect(inner.map { $0["name"]?.stringValue } == ["Slim", "Folder B"])
        #expect(inner[1]["folderLayoutNames"]?.arrayValue?.first?["name"]?.stringValue == "NotesList")
        // Layouts inside folders are not repeated at the top level.
        #expect(!layouts.contains { $0["name"]?.stringValue == "Slim" })
        #expect(layouts.first?["name"]?.stringValue == "Contacts")
        #expect(layouts.first?["table"]?.stringValue == "Contacts")
    }

    @Test(arguments: Via.allCases) func pair08LayoutMetadata(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts")
        #expect(a.status == 200)
        let fields = try #require(a.response["fieldMetaData"]?.arrayValue)
        #expect(!fields.isEmpty)
        for f in fields {
            for key in ["name", "type", "displayType", "result"] { #expect(f[key]?.isString == true, "\(key)") }
            for key in ["global", "autoEnter", "fourDigitYear", "notEmpty", "numeric", "timeOfDay"] { #expect(f[key]?.isBool == true, "\(key)") }
            for key in ["maxRepeat", "maxCharacters", "repetitionStart", "repetitionEnd"] { #expect(f[key]?.isNumber == true, "\(key)") }
        }
        #expect(fields.first { $0["name"]?.stringValue == "id" }?["result"]?.stringValue == "number")
        #expect(fields.first { $0["name"]?.stringValue == "drink" }?["valueList"]?.stringValue == "Drinks")
        #expect(fields.first { $0["name"]?.stringValue == "phones" }?["maxRepeat"]?.numberValue == 3)
        #expect(fields.first { $0["name"]?.stringValue == "g_note_id" }?["global"]?.boolValue == true)
        #expect(fields.first { $0["name"]?.stringValue == "stamp" }?["result"]?.stringValue == "timeStamp")
        let portals = try #require(a.response["portalMetaData"]?.objectPairs)
        #expect(portals.first?.0 == "notes")
        #expect(portals.first?.1.arrayValue?.first?["name"]?.stringValue == "Notes::note")
        let lists = try #require(a.response["valueLists"]?.arrayValue)
        #expect(lists.first?["name"]?.stringValue == "Drinks")
        #expect(lists.first?["values"]?.arrayValue?.first?["value"]?.stringValue == "Tea")
    }

    @Test(arguments: Via.allCases) func pair09And10CreateThenGet(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"name":"Ann","id":7,"date":"02/22/2022"}}"#)
        #expect(a.status == 200)
        let id = try #require(a.response["recordId"]?.stringValue)
        #expect(Int(id) != nil)
        #expect(a.response["modId"]?.stringValue == "0")

        let g = h.send("GET", "\(h.base)/layouts/Contacts/records/\(id)", contentType: nil)
        #expect(g.status == 200)
        #expect(g.data.count == 1)
        let record = try #require(g.data.first)
        #expect(record["fieldData"]?["id"] == .number(7))
        #expect(record["fieldData"]?["date"]?.stringValue == "02/22/2022")
        #expect(record["recordId"]?.stringValue == id)
        #expect(record["modId"]?.stringValue == "0")
        #expect(record["portalData"]?.objectPairs != nil)
        #expect(g.response["dataInfo"]?["foundCount"] == .number(1))
        #expect(g.response["dataInfo"]?["returnedCount"] == .number(1))
        #expect(g.response["dataInfo"]?["totalRecordCount"] == .number(5))
    }

    @Test(arguments: Via.allCases) func pair11EditAndStaleModId(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let id = try h.create(#"{"name":"Ann"}"#)
        let a = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)", body: #"{"fieldData":{"drink":"Tea"},"modId":"0"}"#)
        #expect(a.status == 200)
        #expect(a.response == .object([("modId", .string("1"))]))
        let b = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)", body: #"{"fieldData":{"drink":"Tea"},"modId":"0"}"#)
        #expect(b.status == 500)
        #expect(b.code == "306")
        #expect(b.isEmptyResponse)
    }

    @Test(arguments: Via.allCases) func pair12NullValue(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let id = try h.create(#"{"name":"Ann"}"#)
        let a = h.send("PATCH", "\(h.base)/layouts/Contacts/records/\(id)", body: #"{"fieldData":{"name":null}}"#)
        #expect(a.status != 200)
        #expect(a.code == "1708")
        #expect(a.message == "Parameter value is invalid")
    }

    @Test(arguments: Via.allCases) func pair13UnknownField(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/records", body: #"{"fieldData":{"nope":"x"}}"#)
        #expect(a.status == 500)
        #expect(a.code == "102")
    }

    @Test(arguments: Via.allCases) func pair14UnknownLayout(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/NoSuchLayout/records", contentType: nil)
        #expect(a.status == 500)
        #expect(a.code == "105")
        #expect(a.message == "Layout is missing")
    }

    @Test(arguments: Via.allCases) func pair15UnknownRecord(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records/999999", contentType: nil)
        #expect(a.status == 500)
        #expect(a.code == "101")
    }

    @Test(arguments: Via.allCases) func pair16RangeSortedDescending(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records?_offset=2&_limit=1&_sort=%5B%7B%22fieldName%22%3A%22name%22%2C%22sortOrder%22%3A%22descend%22%7D%5D", contentType: nil)
        #expect(a.status == 200)
        #expect(a.response["dataInfo"]?["returnedCount"] == .number(1))
        #expect(a.response["dataInfo"]?["foundCount"] == .number(4))
        #expect(a.data.first?["fieldData"]?["name"]?.stringValue == "John Doe")
    }

    @Test(arguments: Via.allCases) func pair17FindWithOmit(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                       body: #"{"query":[{"name":"John"},{"name":"Joe"},{"name":"John Doe","omit":"true"}]}"#)
        #expect(a.status == 200)
        let names = Set(a.data.compactMap { $0["fieldData"]?["name"]?.stringValue })
        #expect(names == ["Joe Example", "John Smith"])
    }

    @Test(arguments: Via.allCases) func pair18FindNoMatch(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"==Nobody Here"}]}"#)
        #expect(a.status == 500)
        #expect(a.code == "401")
        #expect(a.message == "No records match the request")
        #expect(a.isEmptyResponse)
    }

    @Test(arguments: Via.allCases) func pair19EmptyCriteria(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{}]}"#)
        #expect(a.status != 200)
        #expect(a.code == "400")
    }

    @Test(arguments: Via.allCases) func pair20PortalLimit(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/records/1?portal=%5B%22notes%22%5D&_limit.notes=1", contentType: nil)
        #expect(a.status == 200)
        let record = try #require(a.data.first)
        let rows = try #require(record["portalData"]?["notes"]?.arrayValue)
        #expect(rows.count == 1)
        #expect(rows.first?["recordId"]?.isString == true)
        #expect(rows.first?["modId"]?.isString == true)
        #expect(rows.first?["Notes::note"]?.stringValue == "first note")
        let info = try #require(record["portalDataInfo"]?.arrayValue?.first)
        #expect(info["returnedCount"] == .number(1))
        #expect(info["foundCount"] == .number(3))
        #expect(info["portalObjectName"]?.stringValue == "notes")
        #expect(info["table"]?.stringValue == "Notes")
    }

    @Test(arguments: Via.allCases) func pair21PortalCreateAndDeleteRelated(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("PATCH", "\(h.base)/layouts/Contacts/records/2", body: #"{"fieldData":{},"portalData":{"notes":[{"Notes::note":"hi"}]}}"#)
        #expect(a.status == 200)
        #expect(a.response["modId"]?.isString == true)
        let info = try #require(a.response["newPortalRecordInfo"]?.arrayValue?.first)
        #expect(info["tableName"]?.stringValue == "Notes")
        let rid = try #require(info["recordId"]?.stringValue)
        var g = h.send("GET", "\(h.base)/layouts/Contacts/records/2", contentType: nil)
        #expect(g.data.first?["portalData"]?["notes"]?.arrayValue?.count == 2)

        let d = h.send("PATCH", "\(h.base)/layouts/Contacts/records/2", body: #"{"fieldData":{"deleteRelated":"Notes.\#(rid)"}}"#)
        #expect(d.status == 200)
        g = h.send("GET", "\(h.base)/layouts/Contacts/records/2", contentType: nil)
        let rows = g.data.first?["portalData"]?["notes"]?.arrayValue ?? []
        #expect(rows.count == 1)
        #expect(!rows.contains { $0["recordId"]?.stringValue == rid })

        // The portal object name is accepted too, and an array deletes several.
        let first = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        let ids = (first.data.first?["portalData"]?["notes"]?.arrayValue ?? []).compactMap { $0["recordId"]?.stringValue }
        #expect(ids.count == 3)
        let many = h.send("PATCH", "\(h.base)/layouts/Contacts/records/1",
                          body: #"{"fieldData":{"deleteRelated":["notes.\#(ids[0])","Notes.\#(ids[1])"]}}"#)
        #expect(many.status == 200)
        let after = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        #expect(after.data.first?["portalData"]?["notes"]?.arrayValue?.count == 1)
    }

    @Test(arguments: Via.allCases) func pair22Scripts(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("GET", "\(h.base)/layouts/Contacts/script/Echo?script.param=abc", contentType: nil)
        #expect(a.status == 200)
        #expect(a.response == .object([("scriptResult", .string("abc")), ("scriptError", .string("0"))]))
        let f = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                       body: #"{"query":[{"name":"John"}],"script.prerequest":"Echo","script.prerequest.param":"p"}"#)
        #expect(f.status == 200)
        #expect(f.response["scriptResult.prerequest"]?.stringValue == "p")
        #expect(f.response["scriptError.prerequest"]?.stringValue == "0")
        #expect(f.data.count == 2)
    }

    @Test(arguments: Via.allCases) func pair23Globals(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let a = h.send("PATCH", "\(h.base)/globals", body: #"{"globalFields":{"Contacts::g_note_id":"1"}}"#)
        #expect(a.status == 200)
        #expect(a.code == "0")
        #expect(a.isEmptyResponse)
    }

    @Test(arguments: Via.allCases) func pair24ContainerUploadAndDownload(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let bytes = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3, 0, 255])
        let up = upload(h, path: "\(h.base)/layouts/Contacts/records/1/containers/portrait/1", part: "upload", filename: "a.png", data: bytes)
        #expect(up.status == 200)
        #expect(up.code == "0")
        #expect(up.response["modId"]?.stringValue == "1")

        let g = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        let url = try #require(g.data.first?["fieldData"]?["portrait"]?.stringValue)
        let regex = try NSRegularExpression(pattern: #"^https?://.+/Streaming_SSL/MainDB/[0-9A-F]+(\.\w+)?\?RCType=EmbeddedRCFileProcessor$"#)
        #expect(regex.firstMatch(in: url, range: NSRange(url.startIndex..., in: url)) != nil, "\(url)")
        #expect(url.hasPrefix(h.origin + "/"))

        let target = String(url.dropFirst(h.origin.count))
        let first = h.send("GET", target, bearer: false, contentType: nil)
        #expect(first.status == 302)
        #expect(first.header("Location") == url)
        let cookie = try #require(first.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let second = h.send("GET", target, bearer: false, contentType: nil, headers: [("Cookie", cookie)])
        #expect(second.status == 200)
        #expect(second.body == bytes)
        #expect(second.header("Content-Type") == "image/png")

        let wrong = upload(h, path: "\(h.base)/layouts/Contacts/records/1/containers/portrait/1", part: "file", filename: "a.png", data: bytes)
        #expect(wrong.status != 200)
        #expect(wrong.code == "960")
    }

    @Test(arguments: Via.allCases) func pair25TokenLifecycle(_ via: Via) throws {
        let h = try Harness(via: via)
        let token = try h.login()
        let out = h.send("DELETE", "\(h.base)/sessions/\(token)", bearer: false, contentType: nil)
        #expect(out.status == 200)
        #expect(out.code == "0")
        #expect(out.isEmptyResponse)
        let v = h.send("GET", "/fmi/data/vLatest/validateSession", contentType: nil)
        #expect(v.status == 401)
        #expect(v.code == "952")
        #expect(v.message == "Invalid FileMaker Data API token (*)")
        #expect(v.isEmptyResponse)

        // Emulator-only: sliding 15-minute idle expiry on the injectable clock.
        try h.login()
        h.emulator.advanceClock(by: 14 * 60 + 59)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        h.emulator.advanceClock(by: 14 * 60 + 59)
        #expect(h.send("GET", "\(h.base)/layouts", contentType: nil).status == 200)
        h.emulator.advanceClock(by: 15 * 60 + 1)
        let expired = h.send("GET", "\(h.base)/layouts", contentType: nil)
        #expect(expired.status == 401)
        #expect(expired.code == "952")
    }

    @Test(arguments: Via.allCases) func pair26Encoding(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        #expect(h.send("GET", "\(h.base)/layouts/My%20Layout%2FOdd/records", contentType: nil).status == 200)
        let plus = h.send("GET", "\(h.base)/layouts/My+Layout%2FOdd/records", contentType: nil)
        #expect(plus.status == 500)
        #expect(plus.code == "105")
    }
}

/// Sends a one-part multipart upload.
func upload(_ h: Harness, path: String, part: String, filename: String, data: Data, contentType: String = "image/png") -> Answer {
    let boundary = "----emulatorTestBoundary7MA4YWxk"
    var body = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(part)\"; filename=\"\(filename)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
    body.append(data)
    body.append(Data("\r\n--\(boundary)--\r\n".utf8))
    let request = HTTPRequest(method: "POST", target: path,
                              headers: [("Host", "127.0.0.1:3000"), ("Authorization", "Bearer \(h.token)"),
                                        ("Content-Type", "multipart/form-data; boundary=\(boundary)")], body: body)
    let r = h.exchange(request)
    return Answer(r)
}
