import Foundation
import Testing
@testable import SwiftFM

// Every endpoint is described once and as the Data API documents it: method, encoded path segments, query items
// and JSON body; an invalid argument is refused before anything is sent.

// MARK: - Helpers

/// The JSON body of an endpoint, re-serialised canonically (sorted keys) for comparison.
func canonicalBody<V>(_ endpoint: Endpoint<V>, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    guard case .json(let data) = endpoint.body else {
        Issue.record("not a JSON body", sourceLocation: sourceLocation)
        return nil
    }
    guard let object = try? JSONSerialization.jsonObject(with: data) else {
        Issue.record("body is not JSON", sourceLocation: sourceLocation)
        return nil
    }
    return canonical(object)
}

/// A JSON value rendered canonically (sorted keys).
func canonical(_ object: Any) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]) else { return "<invalid>" }
    return String(decoding: data, as: UTF8.self)
}

/// Query items as `name=value` strings, in order.
func pairs<V>(_ endpoint: Endpoint<V>) -> [String] {
    endpoint.query.map { "\($0.name)=\($0.value ?? "<nil>")" }
}

/// Parses a JSON query value (`_sort`, `portal`).
func queryJSON<V>(_ endpoint: Endpoint<V>, _ name: String) -> String? {
    guard let value = endpoint.query.first(where: { $0.name == name })?.value,
          let object = try? JSONSerialization.jsonObject(with: Data(value.utf8)) else { return nil }
    return canonical(object)
}

func isDatabase<V>(_ endpoint: Endpoint<V>) -> Bool {
    if case .database = endpoint.scope { return true }
    return false
}

func isSession<V>(_ endpoint: Endpoint<V>) -> Bool {
    if case .session = endpoint.auth { return true }
    return false
}

func isNoBody<V>(_ endpoint: Endpoint<V>) -> Bool {
    if case .none = endpoint.body { return true }
    return false
}

// MARK: - Metadata

@Suite struct EndpointsMetadataTests {
    @Test func productInfo() {
        let endpoint = Endpoints.productInfo()
        #expect(endpoint.method == .get)
        guard case .host = endpoint.scope else { Issue.record("scope"); return }
        #expect(endpoint.segments == ["productInfo"])
        guard case .none = endpoint.auth else { Issue.record("auth"); return }
        #expect(endpoint.query.isEmpty)
        #expect(isNoBody(endpoint))
        #expect(endpoint.invalid == nil)
    }

    @Test func databasesUsesConfiguredBasic() {
        let endpoint = Endpoints.databases()
        #expect(endpoint.segments == ["databases"])
        guard case .host = endpoint.scope else { Issue.record("scope"); return }
        guard case .basic(let encoded) = endpoint.auth else { Issue.record("auth"); return }
        #expect(encoded == nil)
    }

    @Test func layoutsAndScripts() {
        let layouts = Endpoints.layouts()
        #expect(layouts.method == .get && isDatabase(layouts) && isSession(layouts))
        #expect(layouts.segments == ["layouts"])
        let scripts = Endpoints.scripts()
        #expect(scripts.method == .get && isDatabase(scripts) && isSession(scripts))
        #expect(scripts.segments == ["scripts"])
    }

    @Test(arguments: ["Contacts", "My Layout/Odd", "Who?#1", "Résumé 日本", "100%"])
    func layoutMetadataLeavesNamesUnencoded(_ name: String) {
        let endpoint = Endpoints.layoutMetadata(layout: name)
        #expect(endpoint.segments == ["layouts", name])
        #expect(endpoint.query.isEmpty)
        #expect(isSession(endpoint))
    }

    @Test func layoutMetadataWithRecordId() {
        let endpoint = Endpoints.layoutMetadata(layout: "Contacts", recordId: 12)
        #expect(pairs(endpoint) == ["recordId=12"])
    }

    @Test func emptyLayoutNameIsInvalid() {
        #expect(Endpoints.layoutMetadata(layout: "").invalid?.code == "-1002")
        #expect(Endpoints.getRecords(layout: "").invalid?.code == "-1002")
        #expect(Endpoints.runScript(layout: "L", script: "").invalid?.code == "-1002")
    }
}

// MARK: - Records

@Suite struct EndpointsRecordTests {
    @Test func createRecordBody() {
        let endpoint = Endpoints.createRecord(layout: "My Layout/Odd", fieldData: ["name": "Ann", "id": 7, "date": "02/22/2022"],
                                              portalData: ["notes": [["Notes::note": "hi"]]])
        #expect(endpoint.method == .post)
        #expect(isDatabase(endpoint) && isSession(endpoint))
        #expect(endpoint.segments == ["layouts", "My Layout/Odd", "records"])
        #expect(endpoint.query.isEmpty)
        #expect(canonicalBody(endpoint) == canonical([
            "fieldData": ["name": "Ann", "id": 7, "date": "02/22/2022"],
            "portalData": ["notes": [["Notes::note": "hi"]]],
        ] as [String: Any]))
    }

    @Test func createRecordEmptyFieldDataIsAnObject() {
        #expect(canonicalBody(Endpoints.createRecord(layout: "L", fieldData: [:])) == #"{"fieldData":{}}"#)
    }

    @Test func createRecordOptionsScriptsDateFormat() {
        let options = FMWriteOptions(
            scripts: FMScriptOptions(script: FMScriptCall("After", parameter: "a"), prerequest: "Pre",
                                     presort: FMScriptCall("Sort", parameter: "s")),
            dateFormat: .iso8601, entryMode: .script, prohibitMode: .user)
        let endpoint = Endpoints.createRecord(layout: "L", fieldData: ["a": "1"], options: options)
        #expect(canonicalBody(endpoint) == canonical([
            "fieldData": ["a": "1"],
            "options": ["entrymode": "script", "prohibitmode": "user"],
            "dateformats": 2,
            "script": "After", "script.param": "a",
            "script.prerequest": "Pre",
            "script.presort": "Sort", "script.presort.param": "s",
        ] as [String: Any]))
    }

    struct Band: Encodable {
        var name: String
        var city: String?
        var members: Int
    }

    @Test func typedWritesEncodeFields() {
        let create = Endpoints.createRecord(layout: "L", fields: Band(name: "B", city: nil, members: 3), options: FMWriteOptions(dateFormat: .us))
        #expect(canonicalBody(create) == canonical(["fieldData": ["name": "B", "members": 3], "dateformats": 0] as [String: Any]))
        let edit = Endpoints.editRecord(layout: "L", recordId: 2, fields: ["city": "Austin"], modId: "4")
        #expect(edit.method == .patch && edit.segments == ["layouts", "L", "records", "2"])
        #expect(canonicalBody(edit) == canonical(["fieldData": ["city": "Austin"], "modId": "4"] as [String: Any]))
        #expect(Endpoints.createRecord(layout: "L", fields: ["a": Double.nan]).invalid?.code == "-1002")
        #expect(Endpoints.createRecord(layout: "L", fields: [1, 2]).invalid?.code == "-1002")
        #expect(Endpoints.editRecord(layout: "L", recordId: 1, fields: ["a": Optional<String>.none]).invalid?.code == "-1002")
    }

    @Test func createRecordRawPayloadIsSentAsGiven() {
        let endpoint = Endpoints.createRecord(layout: "L", payload: ["fieldData": ["a": 1.5], "script": "X"])
        #expect(canonicalBody(endpoint) == canonical(["fieldData": ["a": 1.5], "script": "X"] as [String: Any]))
    }

    @Test func getRecordPlain() {
        let endpoint = Endpoints.getRecord(layout: "Contacts", recordId: 42)
        #expect(endpoint.method == .get && isDatabase(endpoint) && isSession(endpoint))
        #expect(endpoint.segments == ["layouts", "Contacts", "records", "42"])
        #expect(endpoint.query.isEmpty)
        #expect(isNoBody(endpoint))
    }

    @Test func getRecordPortalsResponseLayoutDateFormatScripts() {
        let options = FMReadOptions(
            portals: [FMPortalRange("notes", offset: 2, limit: 1), FMPortalRange("Other Portal")],
            layoutResponse: "Slim Layout", dateFormat: .fileLocale,
            scripts: FMScriptOptions(script: FMScriptCall("Echo", parameter: "x y"), prerequest: "P"))
        let endpoint = Endpoints.getRecord(layout: "Contacts", recordId: 1, options: options)
        #expect(pairs(endpoint) == [
            #"portal=["notes","Other Portal"]"#,
            "_offset.notes=2", "_limit.notes=1",
            "layout.response=Slim Layout",
            "dateformats=1",
            "script=Echo", "script.param=x y",
            "script.prerequest=P",
        ])
        #expect(queryJSON(endpoint, "portal") == canonical(["notes", "Other Portal"]))
    }

    @Test func emptyPortalListIsSent() {
        let endpoint = Endpoints.getRecord(layout: "L", recordId: 1, options: FMReadOptions(portals: []))
        #expect(pairs(endpoint) == ["portal=[]"])
    }

    @Test func getRecordsRangeAndMultiFieldSort() {
        let endpoint = Endpoints.getRecords(layout: "Contacts", offset: 2, limit: 1,
                                            sort: [.descending("name"), FMSort(field: "Region", order: .valueList("Regions")), .ascending("id")])
        #expect(endpoint.segments == ["layouts", "Contacts", "records"])
        #expect(endpoint.query.map(\.name) == ["_offset", "_limit", "_sort"])
        #expect(pairs(endpoint).prefix(2) == ["_offset=2", "_limit=1"])
        #expect(queryJSON(endpoint, "_sort") == canonical([
            ["fieldName": "name", "sortOrder": "descend"],
            ["fieldName": "Region", "sortOrder": "Regions"],
            ["fieldName": "id", "sortOrder": "ascend"],
        ]))
    }

    @Test func getRecordsWithPortalWindowUsesUnderscoreForm() {
        let endpoint = Endpoints.getRecords(layout: "L", options: FMReadOptions(portals: [FMPortalRange("P/1", offset: 1, limit: 5)]))
        #expect(pairs(endpoint) == [#"portal=["P/1"]"#, "_offset.P/1=1", "_limit.P/1=5"])
        #expect(queryJSON(endpoint, "portal") == canonical(["P/1"]))
    }

    @Test(arguments: [(0, nil), (nil, 0), (-1, 10), (1, -5)] as [(Int?, Int?)])
    func badRangesAreInvalid(_ offset: Int?, _ limit: Int?) {
        #expect(Endpoints.getRecords(layout: "L", offset: offset, limit: limit).invalid?.code == "-1002")
    }

    @Test func badPortalRangeIsInvalid() {
        let options = FMReadOptions(portals: [FMPortalRange("p", limit: 0)])
        #expect(Endpoints.getRecord(layout: "L", recordId: 1, options: options).invalid?.code == "-1002")
        #expect(Endpoints.getRecord(layout: "L", recordId: 1, options: FMReadOptions(portals: [FMPortalRange("")])).invalid?.code == "-1002")
    }

    @Test func editRecordSendsModIdPortalRowsAndDeleteRelated() {
        let endpoint = Endpoints.editRecord(
            layout: "Contacts", recordId: 7, fieldData: ["drink": "Tea"],
            portalData: ["notes": [["recordId": "3", "modId": "1", "Notes::note": "edited"], ["Notes::note": "new"]]],
            modId: "4", deleteRelated: ["Notes.9"])
        #expect(endpoint.method == .patch)
        #expect(endpoint.segments == ["layouts", "Contacts", "records", "7"])
        #expect(canonicalBody(endpoint) == canonical([
            "fieldData": ["drink": "Tea", "deleteRelated": "Notes.9"],
            "portalData": ["notes": [["recordId": "3", "modId": "1", "Notes::note": "edited"], ["Notes::note": "new"]]],
            "modId": "4",
        ] as [String: Any]))
    }

    @Test func editRecordSeveralDeleteRelatedBecomeAnArray() {
        let endpoint = Endpoints.editRecord(layout: "L", recordId: 1, fieldData: [:], deleteRelated: ["Notes.1", "Orders.2"])
        #expect(canonicalBody(endpoint) == canonical(["fieldData": ["deleteRelated": ["Notes.1", "Orders.2"]]] as [String: Any]))
        #expect(Endpoints.editRecord(layout: "L", recordId: 1, fieldData: [:], deleteRelated: [""]).invalid?.code == "-1002")
    }

    @Test func editRecordWithoutModIdOmitsIt() {
        #expect(canonicalBody(Endpoints.editRecord(layout: "L", recordId: 1, fieldData: ["a": "b"])) == #"{"fieldData":{"a":"b"}}"#)
    }

    @Test func editRecordRawPayloadAddsModIdAsString() {
        let endpoint = Endpoints.editRecord(layout: "L", recordId: 5, payload: ["fieldData": ["a": "b"]], modId: 3)
        #expect(canonicalBody(endpoint) == canonical(["fieldData": ["a": "b"], "modId": "3"] as [String: Any]))
        let without = Endpoints.editRecord(layout: "L", recordId: 5, payload: ["fieldData": ["a": "b"]])
        #expect(canonicalBody(without) == #"{"fieldData":{"a":"b"}}"#)
    }

    @Test func deleteRecordPutsScriptsInTheQuery() {
        let endpoint = Endpoints.deleteRecord(layout: "Contacts", recordId: 9,
                                              options: FMScriptOptions(script: FMScriptCall("Log", parameter: "gone"), presort: "S"))
        #expect(endpoint.method == .delete)
        #expect(endpoint.segments == ["layouts", "Contacts", "records", "9"])
        #expect(isNoBody(endpoint))
        #expect(pairs(endpoint) == ["script=Log", "script.param=gone", "script.presort=S"])
    }

    @Test func duplicateRecordBody() {
        let plain = Endpoints.duplicateRecord(layout: "Contacts", recordId: 3)
        #expect(plain.method == .post)
        #expect(plain.segments == ["layouts", "Contacts", "records", "3"])
        #expect(canonicalBody(plain) == "{}")
        let scripted = Endpoints.duplicateRecord(layout: "Contacts", recordId: 3, options: FMScriptOptions(script: FMScriptCall("After", parameter: "p")))
        #expect(canonicalBody(scripted) == canonical(["script": "After", "script.param": "p"]))
    }

    @Test func emptyScriptNameIsInvalid() {
        let options = FMScriptOptions(script: FMScriptCall(""))
        #expect(Endpoints.deleteRecord(layout: "L", recordId: 1, options: options).invalid?.code == "-1002")
        #expect(Endpoints.createRecord(layout: "L", fieldData: [:], options: FMWriteOptions(scripts: options)).invalid?.code == "-1002")
    }
}

// MARK: - Find, scripts, globals

@Suite struct EndpointsFindTests {
    @Test func findBodyWithEverything() {
        let request = FMFindRequest(
            queries: [FMQuery(["name": "John"]), FMQuery(["name": "Joe", "city": "==Paris"]), .omit(["name": "John Doe"])],
            sort: [.ascending("name"), .descending("id")],
            offset: 1, limit: 10,
            portals: [FMPortalRange("Portal1", offset: 1, limit: 5)],
            layoutResponse: "Slim",
            scripts: FMScriptOptions(script: FMScriptCall("After", parameter: "x"), prerequest: FMScriptCall("Echo", parameter: "p")),
            dateFormat: .iso8601)
        let endpoint = Endpoints.find(layout: "Contacts", request: request)
        #expect(endpoint.method == .post && isDatabase(endpoint) && isSession(endpoint))
        #expect(endpoint.segments == ["layouts", "Contacts", "_find"])
        #expect(endpoint.query.isEmpty)
        #expect(canonicalBody(endpoint) == canonical([
            "query": [["name": "John"], ["name": "Joe", "city": "==Paris"], ["name": "John Doe", "omit": "true"]],
            "sort": [["fieldName": "name", "sortOrder": "ascend"], ["fieldName": "id", "sortOrder": "descend"]],
            "offset": "1", "limit": "10",
            "portal": ["Portal1"], "offset.Portal1": "1", "limit.Portal1": "5",
            "layout.response": "Slim",
            "dateformats": 2,
            "script": "After", "script.param": "x",
            "script.prerequest": "Echo", "script.prerequest.param": "p",
        ] as [String: Any]))
    }

    @Test func findMinimal() {
        let endpoint = Endpoints.find(layout: "Contacts", request: FMFindRequest(["name": "==Nobody Here"]))
        #expect(canonicalBody(endpoint) == #"{"query":[{"name":"==Nobody Here"}]}"#)
    }

    @Test func findWithoutQueriesIsInvalid() {
        #expect(Endpoints.find(layout: "L", request: FMFindRequest(queries: [])).invalid?.code == "-1002")
        #expect(Endpoints.find(layout: "L", request: FMFindRequest(queries: [FMQuery(["a": "1"])], limit: 0)).invalid?.code == "-1002")
    }

    @Test func findRawPayload() {
        let endpoint = Endpoints.find(layout: "L", payload: ["query": [["a": "1"], ["b": "2", "omit": "true"]]])
        #expect(canonicalBody(endpoint) == canonical(["query": [["a": "1"], ["b": "2", "omit": "true"]]]))
    }

    @Test func runScript() {
        let endpoint = Endpoints.runScript(layout: "My Layout", script: "Do/It? #1", parameter: "a&b=c")
        #expect(endpoint.method == .get && isSession(endpoint))
        #expect(endpoint.segments == ["layouts", "My Layout", "script", "Do/It? #1"])
        #expect(pairs(endpoint) == ["script.param=a&b=c"])
        #expect(Endpoints.runScript(layout: "L", script: "S").query.isEmpty)
    }

    @Test func setGlobals() {
        let endpoint = Endpoints.setGlobals(["Contacts::g_note_id": "1", "Contacts::g_n": 2])
        #expect(endpoint.method == .patch && isDatabase(endpoint) && isSession(endpoint))
        #expect(endpoint.segments == ["globals"])
        #expect(canonicalBody(endpoint) == canonical(["globalFields": ["Contacts::g_note_id": "1", "Contacts::g_n": 2]] as [String: Any]))
        #expect(Endpoints.setGlobals([:]).invalid?.code == "-1002")
        #expect(Endpoints.setGlobals(["Contacts::g": NSNull()]).invalid?.code == "-1002")
    }
}

// MARK: - Containers

@Suite struct EndpointsContainerTests {
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13])

    @Test func uploadFromData() throws {
        let endpoint = Endpoints.uploadContainer(layout: "Contacts", recordId: 4, field: "photo field", repetition: 2,
                                                 data: Self.png, fileName: "a.bin")
        #expect(endpoint.method == .post && isDatabase(endpoint) && isSession(endpoint))
        #expect(endpoint.segments == ["layouts", "Contacts", "records", "4", "containers", "photo field", "2"])
        guard case .multipart(let body, let boundary) = endpoint.body else { Issue.record("not multipart"); return }
        var expected = Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a.bin\"\r\nContent-Type: image/png\r\n\r\n".utf8)
        expected.append(Self.png)
        expected.append(Data("\r\n--\(boundary)--\r\n".utf8))
        #expect(body == expected)
        #expect(boundary.hasPrefix("SwiftFM-"))
    }

    @Test func givenMimeTypeWins() {
        let endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", data: Self.png, fileName: "x.png", mimeType: "application/x-custom")
        guard case .multipart(let body, _) = endpoint.body else { Issue.record("not multipart"); return }
        #expect(String(decoding: body, as: UTF8.self).contains("Content-Type: application/x-custom\r\n"))
    }

    @Test func uploadFromFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-\(UUID().uuidString).pdf")
        try Data("%PDF-1.4 hello".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", fileURL: url)
        #expect(endpoint.invalid == nil)
        #expect(endpoint.segments.last == "1")
        // A file is streamed: the body names the file and is assembled on disk when the call is sent.
        guard case .multipartFile(let source, let fileName, let mimeType, let boundary) = endpoint.body else { Issue.record("not a streamed file"); return }
        #expect(source == url)
        #expect(fileName == url.lastPathComponent)
        #expect(mimeType == "application/pdf")
        let assembled = try Multipart.writeBody(boundary: boundary, fileName: fileName, mimeType: mimeType, source: source)
        defer { try? FileManager.default.removeItem(at: assembled) }
        let text = String(decoding: try Data(contentsOf: assembled), as: UTF8.self)
        #expect(text.contains("filename=\"\(url.lastPathComponent)\""))
        #expect(text.contains("Content-Type: application/pdf\r\n"))
        #expect(text.contains("%PDF-1.4 hello\r\n--\(boundary)--\r\n"))
        let renamed = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", fileURL: url, fileName: "report.pdf")
        guard case .multipartFile(_, let name2, _, _) = renamed.body else { Issue.record("not a streamed file"); return }
        #expect(name2 == "report.pdf")
    }

    @Test func unreadableFileIsFileError() {
        let endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f",
                                                 fileURL: URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString).png"))
        #expect(endpoint.invalid?.code == "-1009")
    }

    @Test func badUploadArguments() {
        #expect(Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", repetition: 0, data: Data(), fileName: "a").invalid?.code == "-1002")
        #expect(Endpoints.uploadContainer(layout: "L", recordId: 1, field: "", data: Data(), fileName: "a").invalid?.code == "-1002")
        #expect(Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", data: Data(), fileName: "").invalid?.code == "-1002")
    }

    @Test func containerHopShape() throws {
        let url = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor"))
        let first = Endpoints.containerHop(url: url)
        #expect(first.method == .get)
        guard case .absolute(let target) = first.scope else { Issue.record("scope"); return }
        #expect(target == url)
        guard case .none = first.auth else { Issue.record("auth"); return }
        #expect(first.headers.isEmpty)
        #expect(Endpoints.containerHop(url: url, cookie: "X-FMS-Session-Key=abc").headers == ["Cookie": "X-FMS-Session-Key=abc"])
    }

    @Test func containerHopDecodesRedirectAndData() throws {
        let url = try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor"))
        let endpoint = Endpoints.containerHop(url: url)
        let redirect = try endpoint.decode(.init(status: 302, headers: [
            "location": "/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor&Redirect=1",
            "Set-Cookie": "X-FMS-Session-Key=abc123; HttpOnly; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT, other=2; Path=/",
        ], body: Data()))
        #expect(redirect == .redirect(try #require(URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor&Redirect=1")),
                                      cookie: "X-FMS-Session-Key=abc123; other=2"))
        let data = try endpoint.decode(.init(status: 200, headers: [:], body: Data([1, 2, 3])))
        #expect(data == .data(Data([1, 2, 3])))
        #expect(throws: FMError.self) { try endpoint.decode(.init(status: 302, headers: [:], body: Data())) }
    }

    @Test func cookieMerging() {
        #expect(Endpoints.mergeCookies("a=1; b=2", "b=3; c=4") == "a=1; b=3; c=4")
        #expect(Endpoints.mergeCookies(nil, nil) == nil)
        #expect(Endpoints.setCookie(in: HTTPHeader.value("Set-Cookie", in: ["SET-COOKIE": "k=v"])) == "k=v")
    }
}
