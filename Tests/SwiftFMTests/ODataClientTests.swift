import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Wire shapes FileMaker's OData service answers with (ODATA.md: captures from FMS 22, Claris's examples).
enum ODataBodies {
    static let base = "https://fms.example.com/fmi/odata/v4/Contacts"
    static let collection = #"""
    {"@context":"https://fms.example.com/fmi/odata/v4/Contacts/$metadata#contacts(\"name\",\"PrimaryKey\")",
     "value":[{"@id":"https://fms.example.com/fmi/odata/v4/Contacts/contacts('B5BF')","@editLink":"https://fms.example.com/fmi/odata/v4/Contacts/contacts('B5BF')",
               "name":"Eric","PrimaryKey":"B5BF","age":42,"born":"1980-05-01","nick":null}],
     "@odata.count":3,"@odata.nextLink":"https://fms.example.com/fmi/odata/v4/Contacts/contacts?$skiptoken=1"}
    """#
    static func page(_ names: [String], next: String?) -> String {
        let rows = names.map { #"{"@odata.id":"x","name":"\#($0)","age":"7"}"# }.joined(separator: ",")
        return #"{"@odata.context":"x","value":[\#(rows)]"# + (next.map { #","@odata.nextLink":"\#($0)""# } ?? "") + "}"
    }
    static let single = #"""
    {"@context":"https://fms.example.com/fmi/odata/v4/Contacts/$metadata#contacts/$entity","@id":"x","@editLink":"x","name":"O'Brien","PrimaryKey":"O'Brien"}
    """#
    static let fieldMissing = #"{"error":{"code":"8309","message":"The field named 'InvalidFieldName' does not exist in a specified table (9)"}}"#
    static let notFound = #"{"error":{"code":"-1023","message":"Record not found"}}"#
    static let badLogin = #"{"error":{"code":"212","message":"Invalid user account and/or password; please try again"}}"#
    static let scriptNested = #"{"scriptResult":{"code":0,"resultParameter":"Hello World"}}"#
    static let scriptFlat = #"{"scriptResult":"3 rows","scriptError":"0"}"#
    static let scriptFailed = #"{"scriptResult":{"code":3,"resultParameter":null}}"#
    static let metadata = #"""
    <?xml version="1.0" encoding="utf-8"?>
    <edmx:Edmx Version="4.01" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
      <edmx:DataServices>
        <Schema Namespace="com.filemaker.odata.WebData.fmp12" xmlns="http://docs.oasis-open.org/odata/ns/edm">
          <Annotation Term="ServerVersion" String="OData Engine 22.0.2" />
          <Annotation Term="Org.OData.Core.V1.SchemaVersion" String="756294fbf83cb558" />
          <EntityType Name="Builder_Contacts_">
            <Annotation Term="com.filemaker.odata.TableID" String="FMTID:1065107" />
            <Key><PropertyRef Name="__pk_builder_contacts_id" /></Key>
            <Property Name="__pk_builder_contacts_id" Type="Edm.String" Nullable="false">
              <Annotation Term="com.filemaker.odata.FieldID" String="FMFID:4296032403" />
            </Property>
            <Property Name="ModificationTimestamp" Type="Edm.DateTimeOffset" Nullable="false" DefaultValue="CURRENT_TIMESTAMP">
              <Annotation Term="com.filemaker.odata.FieldID" String="FMFID:17180934291" />
              <Annotation Term="com.filemaker.odata.VersionID" Bool="true" />
            </Property>
            <Property Name="full_address" Type="Edm.String">
              <Annotation Term="com.filemaker.odata.FieldID" String="FMFID:38655770773" />
              <Annotation Term="com.filemaker.odata.Calculation" Bool="true" />
              <Annotation Term="Org.OData.Core.V1.Permissions">
                <EnumMember>Org.OData.Core.V1.Permission/Read</EnumMember>
              </Annotation>
            </Property>
            <Property Name="photo" Type="Edm.Binary">
              <Annotation Term="com.filemaker.odata.FieldID" String="FMFID:944893870229" />
              <Annotation Term="com.filemaker.odata.ExternalSecurePath" String="WebData.fmp12/" />
            </Property>
            <Property Name="rating" Type="Edm.Decimal">
              <Annotation Term="com.filemaker.odata.MaxRepetitions" Int="3" />
            </Property>
            <Annotation Term="com.filemaker.odata.BestRowID" String="ROWID" />
            <Annotation Term="com.filemaker.odata.RowVersion" String="ROWMODID" />
            <NavigationProperty Name="Builder" Type="Collection(com.filemaker.odata.WebData.fmp12.Builder_)" />
          </EntityType>
          <EntityType Name="Builder_">
            <Property Name="name" Type="Edm.String" />
            <Annotation Term="com.filemaker.odata.BestRowID" String="ROWID" />
          </EntityType>
          <EntityContainer Name="WebData.fmp12">
            <EntitySet Name="Builder_Contacts" EntityType="com.filemaker.odata.WebData.fmp12.Builder_Contacts_">
              <Annotation Term="Org.OData.Core.V1.ResourcePath" String="Builder_Contacts" />
              <NavigationPropertyBinding Path="Builder" Target="Builder" />
            </EntitySet>
            <EntitySet Name="Builder" EntityType="com.filemaker.odata.WebData.fmp12.Builder_" />
          </EntityContainer>
          <Annotations Target="com.filemaker.odata.WebData.fmp12">
            <Annotation Term="Org.OData.Core.V1.DereferenceableIDs" Bool="true" />
          </Annotations>
        </Schema>
      </edmx:DataServices>
    </edmx:Edmx>
    """#
}

/// An FMOData over the stub transport, on the harness's marked callback queue and logger, with no back-off.
struct ODataHarness {
    let harness: Harness
    let odata: FMOData
    var stub: StubTransport { harness.stub }

    init(credentials: FMCredentials? = .basic(username: "admin", password: "s3cret-pass"), retry: FMRetryPolicy = .standard,
         sourceLocation: SourceLocation = #_sourceLocation, _ handler: @escaping StubTransport.Handler) {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: credentials)
        configuration.retry = retry
        harness = Harness(configuration: configuration, sourceLocation: sourceLocation, handler)
        harness.api.retryJitter.withLock { $0 = { _ in 0 } }
        odata = FMOData(sharing: harness.api)
    }

    /// Runs one callback call and returns its `(value, code)`, checking it completed once on the callback queue.
    func run<V>(sourceLocation: SourceLocation = #_sourceLocation,
                _ start: (FMOData, @escaping (V?, String) -> Void) -> FMRequest) -> (V?, String) {
        let recorder = Recorder<UncheckedBox<(V?, String)>>(queueKey: Harness.key)
        _ = start(odata) { value, code in recorder.record(UncheckedBox((value, code))) }
        let values = recorder.wait(sourceLocation: sourceLocation)
        harness.drain()
        #expect(recorder.values.count == 1, sourceLocation: sourceLocation)
        #expect(recorder.offQueue == 0, "completion ran off the callback queue", sourceLocation: sourceLocation)
        return values.first?.value ?? (nil, "no completion")
    }
}

@Suite("FMOData against a stub transport")
struct ODataClientTests {
    static let basic = "Basic " + basicValue("admin", "s3cret-pass")

    @Test("metadata: entity types, keys, fields with Edm and FileMaker types, annotations, relationships")
    func metadata() throws {
        let setup = ODataHarness { request in
            request.url?.path == "/fmi/odata/v4/Contacts/$metadata" ? .body(200, Data(ODataBodies.metadata.utf8), contentType: "application/xml") : nil
        }
        let (value, code) = setup.run { $0.metadata(completion: $1) }
        #expect(code == "0")
        let metadata = try #require(value)
        #expect(metadata.namespace == "com.filemaker.odata.WebData.fmp12")
        #expect(metadata.serverVersion == "OData Engine 22.0.2")
        #expect(metadata.schemaVersion == "756294fbf83cb558")
        #expect(metadata.entitySets.map(\.name) == ["Builder_Contacts", "Builder"])
        #expect(metadata.entitySet(named: "Builder_Contacts")?.navigationBindings == ["Builder": "Builder"])
        let type = try #require(metadata.entityType(ofSet: "Builder_Contacts"))
        #expect(type.name == "Builder_Contacts_")
        #expect(type.tableID == "FMTID:1065107")
        #expect(type.key == ["__pk_builder_contacts_id"])
        #expect(type.annotations["com.filemaker.odata.BestRowID"] == "ROWID")
        #expect(type.properties.map(\.name) == ["__pk_builder_contacts_id", "ModificationTimestamp", "full_address", "photo", "rating"])
        let pk = try #require(type.property(named: "__pk_builder_contacts_id"))
        #expect(pk.nullable == false && pk.fieldID == "FMFID:4296032403" && pk.fileMakerType == .text)
        let stamp = try #require(type.property(named: "ModificationTimestamp"))
        #expect(stamp.fileMakerType == .timestamp && stamp.isVersionID && stamp.defaultValue == "CURRENT_TIMESTAMP")
        let calc = try #require(type.property(named: "full_address"))
        #expect(calc.isCalculation && calc.isReadOnly && !calc.isSummary)
        #expect(type.property(named: "photo")?.fileMakerType == .container)
        #expect(type.property(named: "rating")?.maxRepetitions == 3)
        #expect(type.property(named: "rating")?.fileMakerType == .number)
        #expect(type.navigationProperties == [FMODataNavigationProperty(name: "Builder", targetType: "com.filemaker.odata.WebData.fmp12.Builder_",
                                                                        isCollection: true)])
        #expect(metadata.entityType(ofSet: "Builder")?.key == [])
        let request = try #require(setup.stub.requests.first)
        #expect(request.header("Authorization") == Self.basic)
        #expect(request.header("Accept") == "application/xml")
        #expect(request.httpMethod == "GET")
    }

    @Test("metadata that is not CSDL is -1007")
    func metadataNotCSDL() {
        let setup = ODataHarness { _ in .body(200, Data("<html><body>hi</body></html>".utf8), contentType: "text/html") }
        #expect(setup.run { $0.metadata(completion: $1) }.1 == "-1007")
    }

    @Test("records: the query on the wire, rows without annotations, count and next link")
    func records() async throws {
        let setup = ODataHarness { _ in .json(200, ODataBodies.collection) }
        let query = FMODataQuery(filter: .eq("name", "O'Brien") && .gt("age", 30), select: ["name", "PrimaryKey"],
                                 orderBy: [.descending("name")], top: 1, count: true)
        let page = try await setup.odata.records(from: "contacts", query: query)
        #expect(page.rows.count == 1)
        #expect(page.rows.first?["name"] as? String == "Eric")
        #expect((page.rows.first?["age"] as? NSNumber)?.intValue == 42)
        #expect(page.rows.first?["nick"] is NSNull)
        #expect(page.rows.first?.keys.contains { $0.hasPrefix("@") } == false)
        #expect(page.count == 3)
        #expect(page.nextLink?.absoluteString == ODataBodies.base + "/contacts?$skiptoken=1")
        let url = try #require(setup.stub.requests.first?.url?.absoluteString)
        #expect(url == ODataBodies.base + "/contacts?$select=name,PrimaryKey&$filter=name%20eq%20'O''Brien'%20and%20age%20gt%2030"
                + "&$orderby=name%20desc&$top=1&$count=true")
        #expect(setup.stub.requests.first?.header("OData-Version") == "4.0")
        #expect(setup.stub.requests.first?.header("Accept") == "application/json")
    }

    @Test("the callback and async surfaces give the same page; 4.01 spellings (@count, @nextLink) are read too")
    func callbackAndAsyncAgree() async throws {
        let body = #"{"@context":"x","@count":"2","@nextLink":"contacts?$skiptoken=9","value":[{"@id":"x","name":"A"},{"name":"B"}]}"#
        let setup = ODataHarness { _ in .json(200, body) }
        let (value, code) = setup.run { $0.records(from: "contacts", completion: $1) }
        #expect(code == "0")
        let async = try await setup.odata.records(from: "contacts")
        for page in [try #require(value), async] {
            #expect(page.rows.map { $0["name"] as? String } == ["A", "B"])
            #expect(page.count == 2)
            #expect(page.nextLink?.absoluteString == "contacts?$skiptoken=9")
        }
    }

    struct Person: Decodable, Equatable {
        var name: String
        var age: Int?
        var born: Date?
    }

    @Test("records(as:) decodes rows with FileMaker's rules; a row that does not decode is -1007")
    func typed() async throws {
        let setup = ODataHarness { _ in .json(200, ODataBodies.collection) }
        let page = try await setup.odata.records(as: Person.self, from: "contacts")
        #expect(page.rows.first?.name == "Eric")
        #expect(page.rows.first?.age == 42)
        #expect(page.rows.first?.born == ISO8601DateFormatter().date(from: "1980-05-01T00:00:00Z"))
        #expect(page.count == 3)
        struct Wrong: Decodable { var name: Int }
        let (wrong, code) = setup.run { $0.records(as: Wrong.self, from: "contacts", completion: $1) }
        #expect(wrong == nil && code == "-1007")
    }

    struct Stamped: Decodable {
        var name: String
        var created: Date
        var shifted: Date
        var local: Date?
    }

    @Test("records(as:) reads OData's ISO timestamps: Z and a GMT offset name the instant, FileMaker's zone-less form still reads in UTC")
    func typedTimestamps() async throws {
        let body = #"{"value":[{"name":"A","created":"2025-12-05T16:36:53Z","shifted":"2025-12-05T18:36:53.5+02:00","local":"2025-12-05 16:36:53"}]}"#
        let setup = ODataHarness { _ in .json(200, body) }
        let page = try await setup.odata.records(as: Stamped.self, from: "contacts")
        let row = try #require(page.rows.first)
        #expect(row.created == Date(timeIntervalSince1970: 1_764_952_613))
        #expect(row.shifted == Date(timeIntervalSince1970: 1_764_952_613.5))
        #expect(row.local == Date(timeIntervalSince1970: 1_764_952_613))
        #expect(FileMakerDate.parse("2025-12-05T16:36:53+2:00", timeZone: FileMakerDecoder.utc) == nil)   // hours need two digits
        #expect(FileMakerDate.parse("2025-12-05T16:36:53Zx", timeZone: FileMakerDecoder.utc) == nil)
        #expect(FileMakerDate.parse("16:36:53Z", timeZone: FileMakerDecoder.utc) == nil)                  // a zone needs a date
    }

    @Test("pages and forEachPage follow @odata.nextLink to the end")
    func paging() async throws {
        let setup = ODataHarness { request in
            let url = request.url?.absoluteString ?? ""
            if url.hasSuffix("/contacts?$top=5") { return .json(200, ODataBodies.page(["a", "b"], next: ODataBodies.base + "/contacts?$skiptoken=2")) }
            if url.hasSuffix("$skiptoken=2") { return .json(200, ODataBodies.page(["c", "d"], next: "/fmi/odata/v4/Contacts.fmp12/contacts?$skiptoken=4")) }
            if url.hasSuffix("$skiptoken=4") { return .json(200, ODataBodies.page(["e"], next: nil)) }
            return nil
        }
        var names: [String] = []
        for try await page in setup.odata.pages(from: "contacts", query: FMODataQuery(top: 5)) {
            names += page.rows.compactMap { $0["name"] as? String }
        }
        #expect(names == ["a", "b", "c", "d", "e"])
        #expect(setup.stub.requests.count == 3)
        // A path-absolute link is resolved on the configured server; the database is the server's spelling.
        #expect(setup.stub.requests.last?.url?.absoluteString == "https://fms.example.com/fmi/odata/v4/Contacts.fmp12/contacts?$skiptoken=4")

        struct Row: Decodable { var name: String; var age: Int }
        var typed: [String] = []
        for try await page in setup.odata.pages(as: Row.self, from: "contacts", query: FMODataQuery(top: 5)) {
            typed += page.rows.map { "\($0.name)\($0.age)" }   // age arrives as text ("7"): FileMaker's rules read it
        }
        #expect(typed == ["a7", "b7", "c7", "d7", "e7"])
        #expect(setup.stub.requests.count == 6)

        let seen = Locked<[String]>([])
        let (total, code) = setup.run { odata, done in
            odata.forEachPage(from: "contacts", query: FMODataQuery(top: 5), page: { page in
                seen.withLock { $0 += page.rows.compactMap { $0["name"] as? String } }
                return true
            }, completion: done)
        }
        #expect(code == "0" && total == 5)
        #expect(seen.value == ["a", "b", "c", "d", "e"])
    }

    @Test("a next link to another server is refused without sending (credentials stay home)")
    func foreignNextLink() throws {
        let setup = ODataHarness { request in
            request.url?.host == "fms.example.com" ? .json(200, ODataBodies.page(["a"], next: "https://evil.example.net/fmi/odata/v4/Contacts/contacts?$skiptoken=1")) : .json(200, ODataBodies.page([], next: nil))
        }
        let (total, code) = setup.run { odata, done in
            odata.forEachPage(from: "contacts", page: { _ in true }, completion: done)
        }
        #expect(code == "-1007" && total == nil)
        #expect(setup.stub.requests.allSatisfy { $0.url?.host == "fms.example.com" })
        #expect(setup.stub.requests.count == 1)
    }

    @Test("record by key: the quoted key on the wire, the fields back")
    func recordByKey() async throws {
        let setup = ODataHarness { request in
            request.url?.absoluteString == ODataBodies.base + "/contacts('O''Brien')?$select=name" ? .json(200, ODataBodies.single) : .json(404, ODataBodies.notFound)
        }
        let row = try await setup.odata.record(from: "contacts", key: "O'Brien", query: FMODataQuery(filter: .eq("x", 1), select: ["name"]))
        #expect(row["name"] as? String == "O'Brien")
        #expect(row["@id"] == nil)
        let (missing, code) = setup.run { $0.record(from: "contacts", key: 7, completion: $1) }
        #expect(missing == nil && code == "-1023")
        await #expect(throws: FMError(code: "-1023", message: "Record not found", httpStatus: 404)) {
            try await setup.odata.record(from: "contacts", key: .rowID(7))
        }
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/contacts(ROWID=7)")
    }

    @Test("count: the $count path, and the collection's @odata.count when a server refuses it")
    func count() async throws {
        let setup = ODataHarness { request in
            let url = request.url?.absoluteString ?? ""
            if url == ODataBodies.base + "/contacts/$count?$filter=city%20eq%20'Austin'" { return .body(200, Data("42".utf8), contentType: "text/plain") }
            if url.hasPrefix(ODataBodies.base + "/refusing/$count") { return .json(400, #"{"error":{"code":"-1002","message":"Error: syntax error in URL at: '$count'"}}"#) }
            if url == ODataBodies.base + "/refusing?$top=1&$count=true" { return .json(200, #"{"@odata.count":17,"value":[]}"#) }
            return nil
        }
        #expect(try await setup.odata.count(of: "contacts", filter: .eq("city", "Austin")) == 42)
        let (value, code) = setup.run { $0.count(of: "refusing", completion: $1) }
        #expect(value == 17 && code == "0")
        #expect(setup.stub.requests.last?.header("Accept") == "application/json")
    }

    @Test("create, update, delete: methods, bodies, statuses, affected rows")
    func writes() async throws {
        let setup = ODataHarness { request in
            switch request.httpMethod {
            case "POST": return .json(201, #"{"@context":"x","@id":"x","name":"Ada","PrimaryKey":"K1","created":"2025-12-05T16:36:53Z"}"#,
                                      headers: ["Location": ODataBodies.base + "/contacts('K1')"])
            case "PATCH": return .json(204, "", headers: ["fmodata.affected_rows": "1"])
            case "DELETE": return .json(204, "")
            default: return nil
            }
        }
        let created = try await setup.odata.createRecord(in: "contacts", fields: ["name": "Ada", "age": 36])
        #expect(created["PrimaryKey"] as? String == "K1")
        let post = try #require(setup.stub.requests.first)
        #expect(post.httpMethod == "POST" && post.url?.absoluteString == ODataBodies.base + "/contacts")
        #expect(post.header("Content-Type") == "application/json")
        let body = try #require(post.httpBody.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        #expect(body["name"] as? String == "Ada" && (body["age"] as? NSNumber)?.intValue == 36)

        let (updated, code) = setup.run { $0.updateRecord(in: "contacts", key: "K1", fields: ["name": "Ada L."], completion: $1) }
        #expect(updated == 1 && code == "0")
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/contacts('K1')")
        #expect(try await setup.odata.deleteRecord(in: "contacts", key: 12) == 1)
        #expect(setup.stub.requests.last?.httpMethod == "DELETE")
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/contacts(12)")

        // A value JSON cannot hold is -1002, and nothing is sent.
        let before = setup.stub.requests.count
        let (none, invalid) = setup.run { $0.createRecord(in: "contacts", fields: ["bad": Date()], completion: $1) }
        #expect(none == nil && invalid == "-1002")
        #expect(setup.stub.requests.count == before)
    }

    @Test("scripts: no body without a parameter, the nested and the flat result shapes, a script error is not a call error")
    func scripts() async throws {
        let setup = ODataHarness { request in
            switch request.url?.lastPathComponent {
            case "Script.Hello World": return .json(200, ODataBodies.scriptNested)
            case "Script.Count": return .json(200, ODataBodies.scriptFlat)
            case "Script.Fail": return .json(200, ODataBodies.scriptFailed)
            default: return nil
            }
        }
        let hello = try await setup.odata.runScript("Hello World", parameter: "World")
        #expect(hello == FMODataScriptResult(code: "0", resultParameter: "Hello World"))
        let post = try #require(setup.stub.requests.first)
        #expect(post.url?.absoluteString == ODataBodies.base + "/Script.Hello%20World")
        #expect(post.httpBody.flatMap { String(data: $0, encoding: .utf8) } == #"{"scriptParameterValue":"World"}"#)
        let (count, code) = setup.run { $0.runScript("Count", completion: $1) }
        #expect(code == "0" && count == FMODataScriptResult(code: "0", resultParameter: "3 rows"))
        #expect(setup.stub.requests.last?.httpBody == nil || setup.stub.requests.last?.httpBody?.isEmpty == true)
        #expect(setup.stub.requests.last?.header("Content-Type") == nil)
        let failed = try await setup.odata.runScript("Fail")
        #expect(failed.code == "3" && failed.resultParameter == nil)
    }

    @Test(arguments: [
        (StubAnswer.json(400, ODataBodies.fieldMissing), "8309", 400),
        (StubAnswer.json(404, #"{"error":{"code":"-1020","message":"Table 'x' not defined in database"}}"#), "-1020", 404),
        (StubAnswer.json(401, ODataBodies.badLogin), "212", 401),
        (StubAnswer.json(400, #"{"error":{"code":-1002,"message":{"value":"Error: syntax error in URL at: '$top'"}}}"#), "-1002", 400),
        (StubAnswer.body(401, Data("<m:error><m:code>212</m:code><m:message>bad</m:message></m:error>".utf8), contentType: "application/xml"), "212", 401),
        (StubAnswer.body(404, Data("<html>not here</html>".utf8), contentType: "text/html"), "-1006", 404),
        (StubAnswer.json(500, #"{"error":{"code":"0","message":"OK"}}"#), "-1007", 500),
        (StubAnswer.json(500, #"{"messages":[{"code":"105"}]}"#), "-1007", 500),
    ])
    func errors(answer: StubAnswer, code: String, status: Int) async throws {
        let setup = ODataHarness(retry: .none) { _ in answer }
        let (value, callbackCode) = setup.run { $0.records(from: "contacts", completion: $1) }
        #expect(value == nil && callbackCode == code)
        do {
            _ = try await setup.odata.records(from: "contacts")
            Issue.record("no error thrown")
        } catch let error as FMError {
            #expect(error.code == code && error.httpStatus == status)
        }
    }

    @Test("reads are retried after a transient failure, writes are not")
    func retries() async throws {
        let attempts = Locked(0)
        let setup = ODataHarness { _ in
            attempts.withLock { $0 += 1; return $0 } == 1 ? .json(503, #"{"error":{"code":"-1","message":"busy"}}"#) : .json(200, ODataBodies.collection)
        }
        let page = try await setup.odata.records(from: "contacts")
        #expect(page.rows.count == 1 && setup.stub.requests.count == 2)

        let writes = ODataHarness { _ in .json(503, #"{"error":{"code":"-1","message":"busy"}}"#) }
        let (none, code) = writes.run { $0.createRecord(in: "contacts", fields: ["name": "x"], completion: $1) }
        #expect(none == nil && code == "-1")
        #expect(writes.stub.requests.count == 1)
        _ = writes.run { $0.runScript("Hello", completion: $1) }
        #expect(writes.stub.requests.count == 2)
    }

    @Test("Claris ID: FMID <token> on every request, renewed once after a 401")
    func clarisID() async throws {
        let asked = Locked<[Bool]>([])
        let provider = FMClarisIDTokenProvider { refresh, done in
            let count = asked.withLock { $0.append(refresh); return $0.count }
            done(.success("id-token-\(count)"))
        }
        let setup = ODataHarness(credentials: .clarisID(provider)) { request in
            request.header("Authorization") == "FMID id-token-1" ? .json(401, ODataBodies.badLogin) : .json(200, ODataBodies.collection)
        }
        let page = try await setup.odata.records(from: "contacts")
        #expect(page.rows.count == 1)
        #expect(asked.value == [false, true])
        #expect(setup.stub.requests.map { $0.header("Authorization") } == ["FMID id-token-1", "FMID id-token-2"])
        let (_, code) = setup.run { $0.count(of: "contacts", completion: $1) }
        #expect(code != "0")   // the stub answers the collection, not a count: only the header matters here
        #expect(setup.stub.requests.last?.header("Authorization") == "FMID id-token-3")

        // A provider that fails completes the call with its error, on the callback queue; nothing is sent.
        let failing = ODataHarness(credentials: .clarisID(FMClarisIDTokenProvider { _, done in
            done(.failure(FMError(code: FMError.ClientCode.signInFailed, message: "no")))
        })) { _ in nil }
        #expect(failing.run { $0.records(from: "contacts", completion: $1) }.1 == FMError.ClientCode.signInFailed)
        #expect(failing.stub.requests.isEmpty)
    }

    @Test("no credentials or OAuth credentials: -1001, nothing sent")
    func credentialsNeeded() {
        for credentials: FMCredentials? in [nil, .oauth(requestId: "r", identifier: "i")] {
            let setup = ODataHarness(credentials: credentials) { _ in nil }
            #expect(setup.run { $0.records(from: "contacts", completion: $1) }.1 == "-1001")
            #expect(setup.stub.requests.isEmpty)
        }
    }

    @Test("an unsafe name fails with -1002 before anything is sent")
    func invalidQuery() async throws {
        let setup = ODataHarness { _ in nil }
        let (_, code) = setup.run { $0.records(from: "contacts", query: FMODataQuery(filter: .eq("a\"b", 1)), completion: $1) }
        #expect(code == "-1002")
        await #expect(throws: FMError.self) { try await setup.odata.records(from: "", query: FMODataQuery()) }
        #expect(setup.stub.requests.isEmpty)
    }

    @Test("the log names each request and never shows the password, the Basic value or the token")
    func redactedLogs() async throws {
        let provider = FMClarisIDTokenProvider(token: "secret-claris-token")
        let setup = ODataHarness { _ in .json(200, ODataBodies.collection) }
        _ = try await setup.odata.records(from: "contacts", query: FMODataQuery(filter: .eq("name", "x")))
        let fmid = ODataHarness(credentials: .clarisID(provider)) { _ in .json(401, ODataBodies.badLogin) }
        _ = fmid.run { $0.records(from: "contacts", completion: $1) }
        let lines = (setup.harness.logs.values + fmid.harness.logs.values).map(\.message)
        #expect(lines.contains { $0.contains("GET /fmi/odata/v4/Contacts/contacts?…") })
        for line in lines {
            #expect(!line.contains("s3cret-pass") && !line.contains(basicValue("admin", "s3cret-pass")) && !line.contains("secret-claris-token"), "\(line)")
        }
        #expect(!String(describing: setup.odata).contains("s3cret-pass"))
    }

    @Test("metrics name OData endpoints by kind")
    func metrics() async throws {
        final class Observer: FMMetricsObserver, @unchecked Sendable {
            let calls = Locked<[FMCallMetrics]>([])
            func callFinished(_ call: FMCallMetrics) { calls.withLock { $0.append(call) } }
            func poolEvent(_ event: FMPoolEvent) {}
        }
        let observer = Observer()
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.metrics = observer
        let stub = StubTransport { _ in .json(200, ODataBodies.collection) }
        let odata = FMOData(sharing: DataAPI(configuration: configuration, transport: stub))
        _ = try await odata.records(from: "contacts")
        #expect(observer.calls.value.map(\.endpoint) == ["GET odata/{set}"])
        #expect(observer.calls.value.first?.code == "0")
    }
}

@Suite("FMOData containers against a stub transport")
struct ODataContainerTests {
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<200).map { UInt8($0) })

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("odata-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("download: $value with Accept */*, into memory and streamed into a file")
    func download() async throws {
        let setup = ODataHarness { request in
            request.url?.absoluteString == ODataBodies.base + "/Artists(7)/headshot/$value"
                ? .body(200, Self.png, contentType: "image/png") : .json(404, ODataBodies.notFound)
        }
        let data = try await setup.odata.downloadContainer(from: "Artists", key: 7, field: "headshot")
        #expect(data == Self.png)
        #expect(setup.stub.requests.first?.header("Accept") == "*/*")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("head shot.png")
        let (url, code) = setup.run { $0.downloadContainer(from: "Artists", key: 7, field: "headshot", to: target, completion: $1) }
        #expect(code == "0" && url == target)
        #expect(try Data(contentsOf: target) == Self.png)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["head shot.png"])   // no partial file left
        let (missing, missingCode) = setup.run { $0.downloadContainer(from: "Artists", key: 8, field: "headshot", to: target, completion: $1) }
        #expect(missing == nil && missingCode == "-1023")
        #expect(try Data(contentsOf: target) == Self.png)   // the earlier file is untouched
    }

    @Test("upload: a binary PATCH streamed from the caller's file, which stays in place")
    func upload() async throws {
        let setup = ODataHarness { request in request.httpMethod == "PATCH" ? .json(204, "") : nil }
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("photo.bin")
        try Self.png.write(to: file)
        let changed = try await setup.odata.uploadContainer(in: "Artists", key: "O'Brien", field: "headshot", fileURL: file, fileName: "ALFKI.png")
        #expect(changed == 1)
        let patch = try #require(setup.stub.requests.first)
        #expect(patch.url?.absoluteString == ODataBodies.base + "/Artists('O''Brien')/headshot")
        #expect(patch.header("Content-Type") == "image/png")   // sniffed from the bytes
        #expect(patch.header("Content-Disposition") == "inline; filename=ALFKI.png")
        #expect(patch.httpBody == Self.png)
        #expect(FileManager.default.fileExists(atPath: file.path))

        let (count, code) = setup.run {
            $0.uploadContainer(in: "Artists", key: 7, field: "headshot", data: Data("%PDF-1.4".utf8), fileName: "Café menu.pdf", completion: $1)
        }
        #expect(count == 1 && code == "0")
        #expect(setup.stub.requests.last?.header("Content-Disposition") == "inline; filename*=UTF-8''Caf%C3%A9%20menu.pdf")
        #expect(setup.stub.requests.last?.header("Content-Type") == "application/pdf")

        let before = setup.stub.requests.count
        let (none, unreadable) = setup.run {
            $0.uploadContainer(in: "Artists", key: 7, field: "headshot", fileURL: directory.appendingPathComponent("missing.png"), completion: $1)
        }
        #expect(none == nil && unreadable == FMError.ClientCode.fileError)
        #expect(setup.stub.requests.count == before)
    }
}

@Suite("FMOData webhooks and schema against a stub transport")
struct ODataWebhookSchemaTests {
    static let getAll = #"""
    {"@context":"https://fms.example.com/fmi/odata/v4/Contacts/$metadata#Webhook Processor","status":"ACTIVE","webhooks":[
     {"webhookID":1,"tableName":"contact","webhook":"https://hooks.example.com/in","headers":{"X-Key":"k"},"notifySchemaChanges":false,
      "select":"name, city","filter":"city eq 'Austin'","pendingOperations":[{"operation":"ADD","rowIDs":[19967],"status":"NOT_SENT",
      "lastErrorCode":-1002,"lastErrorMessage":"bad","sendAttempts":36}]}]}
    """#

    @Test("add, list, get, delete, invoke: URLs, bodies, answers")
    func webhooks() async throws {
        let setup = ODataHarness { request in
            switch (request.httpMethod ?? "", request.url?.lastPathComponent ?? "") {
            case ("POST", "Webhook.Add"): return .json(200, #"{"webhookResult":{"webhookID":5}}"#)
            case ("GET", "Webhook.GetAll"): return .json(200, Self.getAll)
            case ("GET", "Webhook.Get(9)"): return .json(404, #"{"error":{"code":"-1061","message":"Specified WebHook not found"}}"#)
            case ("POST", "Webhook.Delete(5)"): return .json(200, #"{"webhookResult":{"webhookID":5}}"#)
            case ("POST", "Webhook.Invoke(5)"): return .json(200, #"{"@odata.context":"x","value":[{"row_id":63}]}"#)
            default: return nil
            }
        }
        let hook = FMODataWebhook(url: "https://hooks.example.com/in", tableName: "contact", headers: ["X-Key": "k"],
                                  select: ["name", "Zip Code"], filter: .eq("city", "O'Brien"), maxFailedAttempts: 3)
        let id = try await setup.odata.addWebhook(hook)
        #expect(id == 5)
        let body = try #require(setup.stub.requests.first?.httpBody.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        #expect(body["webhook"] as? String == "https://hooks.example.com/in" && body["tableName"] as? String == "contact")
        #expect(body["endpointHeaders"] as? [String: String] == ["X-Key": "k"])
        #expect(body["select"] as? String == "name,\"Zip Code\"")
        #expect(body["filter"] as? String == "city eq 'O''Brien'")
        #expect((body["maxFailedAttempts"] as? NSNumber)?.intValue == 3)

        let (all, code) = setup.run { $0.webhooks(completion: $1) }
        #expect(code == "0")
        let first = try #require(all?.first)
        #expect(first.id == 1 && first.tableName == "contact" && first.headers == ["X-Key": "k"] && first.select == ["name", "city"])
        #expect(first.filter?.description == "city eq 'Austin'")
        #expect(first.pendingOperations == [FMODataWebhook.PendingOperation(operation: "ADD", rowIDs: [19967], status: "NOT_SENT",
                                                                             lastErrorCode: -1002, lastErrorMessage: "bad", sendAttempts: 36)])
        #expect(setup.run { $0.webhook(id: 9, completion: $1) }.1 == "-1061")
        #expect(try await setup.odata.deleteWebhook(id: 5) == 5)
        let payload = try await setup.odata.invokeWebhook(id: 5, rowIDs: [63, 61])
        #expect((payload["value"] as? [Any])?.count == 1)
        #expect(setup.stub.requests.last?.httpBody.flatMap { String(data: $0, encoding: .utf8) } == #"{"rowIDs":[63,61]}"#)
        // Invoke always sends a body (FileMaker refuses an empty one): [] means every record.
        _ = try await setup.odata.invokeWebhook(id: 5)
        #expect(setup.stub.requests.last?.httpBody.flatMap { String(data: $0, encoding: .utf8) } == #"{"rowIDs":[]}"#)
    }

    @Test("schema: tables, fields and indexes at FileMaker_Tables and FileMaker_Indexes")
    func schema() async throws {
        let setup = ODataHarness { request in
            request.httpMethod == "DELETE" ? .json(204, "") : .json(200, #"{"tableName":"Company","fields":[]}"#)
        }
        let fields = [FMODataFieldDefinition(name: "Company ID", type: "int", primary: true),
                      FMODataFieldDefinition(name: "Notes", type: "varchar(2000)", nullable: false, global: true, defaultValue: "USER")]
        let answer = try await setup.odata.createTable("Company", fields: fields)
        #expect(answer["tableName"] as? String == "Company")
        let post = try #require(setup.stub.requests.first)
        #expect(post.url?.absoluteString == ODataBodies.base + "/FileMaker_Tables")
        let body = try #require(post.httpBody.flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
        let sent = try #require(body["fields"] as? [[String: Any]])
        #expect(sent.count == 2 && sent[0]["primary"] as? Bool == true && sent[1]["nullable"] as? Bool == false && sent[1]["default"] as? String == "USER")
        _ = try await setup.odata.addFields(to: "Company", fields: [FMODataFieldDefinition(name: "Web Site", type: "varchar(100)")])
        #expect(setup.stub.requests.last?.httpMethod == "PATCH" && setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/FileMaker_Tables/Company")
        let (deleted, code) = setup.run { $0.deleteField("Web Site", from: "Company", completion: $1) }
        #expect(deleted?.isEmpty == true && code == "0")
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/FileMaker_Tables/Company/Web%20Site")
        _ = try await setup.odata.createIndex(on: "Notes", in: "Company")
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/FileMaker_Indexes/Company")
        #expect(setup.stub.requests.last?.httpBody.flatMap { String(data: $0, encoding: .utf8) } == #"{"indexName":"Notes"}"#)
        _ = try await setup.odata.deleteIndex(on: "Notes", in: "Company")
        _ = try await setup.odata.deleteTable("Company")
        #expect(setup.stub.requests.last?.url?.absoluteString == ODataBodies.base + "/FileMaker_Tables/Company")
        let before = setup.stub.requests.count
        #expect(setup.run { $0.deleteTable("", completion: $1) }.1 == "-1002")
        #expect(setup.stub.requests.count == before)
    }
}

@Suite("FMOData $batch against a stub transport")
struct ODataBatchTests {
    static func answer(_ lines: [String]) -> Data { Data(lines.joined(separator: "\r\n").utf8) }

    static let success = answer([
        "--batchresponse_abc",
        "Content-Type: multipart/mixed; boundary=changesetresponse_def",
        "",
        "--changesetresponse_def",
        "Content-Type: application/http",
        "Content-Transfer-Encoding: binary",
        "Content-ID: 1",
        "",
        "HTTP/1.1 201 Created",
        "Content-Type: application/json;charset=utf-8",
        "Location: https://fms.example.com/fmi/odata/v4/Contacts/Artists(9)",
        "",
        #"{"@context":"x","name":"Nina","id":9}"#,
        "--changesetresponse_def",
        "Content-Type: application/http",
        "Content-Transfer-Encoding: binary",
        "",
        "HTTP/1.1 204 No Content",
        "fmodata.affected_rows: 1",
        "",
        "",
        "--changesetresponse_def--",
        "--batchresponse_abc",
        "Content-Type: application/http",
        "Content-Transfer-Encoding: binary",
        "",
        "HTTP/1.1 200 Ok",
        "Content-Type: application/json;charset=utf-8",
        "",
        #"{"value":[{"name":"a"}]}"#,
        "--batchresponse_abc--",
        "",
    ])

    static let refused = answer([
        "--batchresponse_x",
        "Content-Type: application/http",
        "",
        "HTTP/1.1 400 Bad Request",
        "Content-Type: application/json",
        "",
        #"{"error":{"code":"8309","message":"The field named 'nope' does not exist"}}"#,
        "--batchresponse_x--",
    ])

    func batch() -> FMODataBatch {
        var batch = FMODataBatch()
        batch.changeset([.create(in: "Artists", fields: ["name": "Nina"]), .update(in: "Artists", key: "O'Brien", fields: ["city": "Paris"])])
        batch.read(from: "Artists", query: FMODataQuery(filter: .eq("city", "Austin"), top: 1))
        return batch
    }

    @Test("the request: multipart/mixed, a change set, path-absolute sub-requests, Content-Length on bodies; one result per operation")
    func roundTrip() async throws {
        let setup = ODataHarness { request in
            request.url?.absoluteString == ODataBodies.base + "/$batch"
                ? .body(200, Self.success, contentType: "multipart/mixed; boundary=batchresponse_abc") : nil
        }
        let results = try await setup.odata.batch(batch())
        #expect(results.map(\.status) == [201, 204, 200])
        #expect(results.map(\.code) == ["0", "0", "0"])
        #expect(results[0].body?["name"] as? String == "Nina")
        #expect(results[1].headers["fmodata.affected_rows"] == "1" && results[1].body == nil)
        #expect((results[2].body?["value"] as? [Any])?.count == 1)

        let request = try #require(setup.stub.requests.first)
        #expect(request.httpMethod == "POST")
        let type = try #require(request.header("Content-Type"))
        #expect(type.hasPrefix("multipart/mixed; boundary=batch_"))
        let boundary = String(type.dropFirst("multipart/mixed; boundary=".count))
        let body = String(decoding: try #require(request.httpBody), as: UTF8.self)
        #expect(body.hasPrefix("--\(boundary)\r\nContent-Type: multipart/mixed; boundary=changeset_"))
        #expect(body.hasSuffix("--\(boundary)--\r\n"))
        #expect(body.contains("POST /fmi/odata/v4/Contacts/Artists HTTP/1.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"name\":\"Nina\"}\r\n"))
        #expect(body.contains("PATCH /fmi/odata/v4/Contacts/Artists('O''Brien') HTTP/1.1\r\n"))
        #expect(body.contains("GET /fmi/odata/v4/Contacts/Artists?$filter=city%20eq%20'Austin'&$top=1 HTTP/1.1\r\nAccept: application/json\r\n\r\n\r\n"))
        #expect(body.contains("Content-ID: 1\r\n") && body.contains("Content-ID: 2\r\n"))
        // Our own request parses back into its three sub-requests, the change set's two nested.
        let groups = ODataBatchWire.split(Data(body.utf8), boundary: boundary)
        #expect(groups.count == 2)
    }

    @Test("a refused change set gives each change its error; an unanswered read gets status 0 and -1008")
    func refusedChangeset() throws {
        let setup = ODataHarness { _ in .body(200, Self.refused, contentType: "multipart/mixed; boundary=batchresponse_x") }
        let (results, code) = setup.run { $0.batch(batch(), completion: $1) }
        #expect(code == "0")
        #expect(results?.map(\.status) == [400, 400, 0])
        #expect(results?.map(\.code) == ["8309", "8309", FMError.ClientCode.emptyResult])
    }

    @Test("an empty batch or an unsafe operation fails with -1002 before sending; the batch is never retried")
    func invalid() {
        let setup = ODataHarness { _ in .json(503, #"{"error":{"code":"-1","message":"busy"}}"#) }
        #expect(setup.run { $0.batch(FMODataBatch(), completion: $1) }.1 == "-1002")
        var bad = FMODataBatch()
        bad.read(from: "Artists", query: FMODataQuery(filter: .eq("a\"b", 1)))
        #expect(setup.run { $0.batch(bad, completion: $1) }.1 == "-1002")
        #expect(setup.stub.requests.isEmpty)
        #expect(setup.run { $0.batch(batch(), completion: $1) }.1 == "-1")
        #expect(setup.stub.requests.count == 1)
    }
}

@Suite("FMOData through the pipeline's stages")
struct ODataPipelineTests {
    @Test("cancel through the handle and through the task: -1005, exactly once, the transport task cancelled")
    func cancel() async throws {
        let held = DispatchSemaphore(value: 0)
        let setup = ODataHarness { _ in held.signal(); return .hold }
        let recorder = Recorder<String>(queueKey: Harness.key)
        let request = setup.odata.records(from: "contacts") { _, code in recorder.record(code) }
        #expect(held.wait(timeout: TestBound.deadline) == .success)
        request.cancel()
        #expect(recorder.wait() == [FMError.ClientCode.cancelled])
        setup.harness.drain()
        #expect(recorder.values.count == 1)
        #expect(setup.stub.tasks.first?.isCancelled == true)

        let task = Task { try await setup.odata.metadata() }
        #expect(await onOwnThread { held.wait(timeout: TestBound.deadline) } == .success)
        task.cancel()
        await #expect(throws: FMError.cancelled) { try await task.value }
    }

    @Test("the deadline (FMConfiguration.timeout) ends a call the server never answers: -1004")
    func deadline() {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.timeout = 0.2
        let harness = Harness(configuration: configuration) { _ in .hold }
        let odata = FMOData(sharing: harness.api)
        let recorder = Recorder<String>()
        odata.count(of: "contacts") { _, code in recorder.record(code) }
        #expect(recorder.wait() == [FMError.ClientCode.timeout])
    }

    @Test("the size cap (FMConfiguration.maxResponseBytes) holds for OData answers: -1011")
    func sizeCap() {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.maxResponseBytes = 64
        let harness = Harness(configuration: configuration) { _ in .json(200, ODataBodies.collection) }
        let odata = FMOData(sharing: harness.api)
        let recorder = Recorder<String>()
        odata.records(from: "contacts") { _, code in recorder.record(code) }
        #expect(recorder.wait() == [FMError.ClientCode.responseTooLarge])
    }

    @Test("a client sharing a DataAPI shares its concurrency cap: the second call leaves only when the first ends")
    func sharedConcurrencyCap() {
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.maxConcurrentRequests = 1
        let held = DispatchSemaphore(value: 0)
        let cancelling = Locked(false)
        let sentAfterCancel = Locked<[Bool]>([])
        let harness = Harness(configuration: configuration) { request in
            if request.url?.path.hasSuffix("/first") == true { held.signal(); return .hold }
            sentAfterCancel.withLock { $0.append(cancelling.value) }
            return .json(200, ODataBodies.collection)
        }
        let odata = FMOData(sharing: harness.api)
        let first = Recorder<String>()
        let second = Recorder<String>()
        let request = odata.records(from: "first") { _, code in first.record(code) }
        #expect(held.wait(timeout: TestBound.deadline) == .success)
        odata.records(from: "second") { _, code in second.record(code) }
        cancelling.withLock { $0 = true }
        request.cancel()
        #expect(first.wait() == [FMError.ClientCode.cancelled])
        #expect(second.wait() == ["0"])
        #expect(sentAfterCancel.value == [true])
    }
}
