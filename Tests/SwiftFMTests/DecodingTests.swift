import Foundation
import Testing
@testable import SwiftFM

// Each endpoint's decoder on real answers: metadata, found sets raw and typed, write results; a wrong shape is -1007.

/// Runs an endpoint's decoder on a canned HTTP 200 body.
func decoded<V>(_ endpoint: Endpoint<V>, _ body: String, status: Int = 200) throws -> V {
    try endpoint.decode(.init(status: status, headers: [:], body: Data(body.utf8)))
}

/// The code of the error an endpoint's decoder throws on `body`, if any.
func decodeError<V>(_ endpoint: Endpoint<V>, _ body: String) -> String? {
    do {
        _ = try decoded(endpoint, body)
        return nil
    } catch let error as FMError {
        return error.code
    } catch {
        return "non-FMError"
    }
}

enum Canned {
    static let ok = #""messages":[{"code":"0","message":"OK"}]"#

    static let productInfo = #"{"response":{"productInfo":{"name":"FileMaker Data API Engine","buildDate":"07/05/2019","version":"18.0.2.217","dateFormat":"MM/dd/yyyy","timeFormat":"HH:mm:ss","timeStampFormat":"MM/dd/yyyy HH:mm:ss"}},\#(ok)}"#
    static let productInfoNew = #"{"messages":[{"code":"0","message":"OK"}],"response":{"productInfo":{"name":"FileMaker Data API Engine","dateFormat":"MM/dd/yyyy","timeFormat":"HH:mm:ss","timeStampFormat":"MM/dd/yyyy HH:mm:ss"}}}"#
    static let databases = #"{"response":{"databases":[{"name":"Contacts"},{"name":"Sales"}]},\#(ok)}"#
    static let layouts = #"{"response":{"layouts":[{"name":"Contacts","table":"Contacts"},{"name":"Package Management","isFolder":true,"folderLayoutNames":[{"name":"Packages","table":""},{"name":"Inner","isFolder":true,"folderLayoutNames":[{"name":"Deep"}]}]}]},\#(ok)}"#
    static let scripts = #"{"response":{"scripts":[{"name":"GotoFirst","isFolder":false},{"name":"A Folder","isFolder":true,"folderScriptNames":[{"name":"script1","isFolder":false},{"name":"-","isFolder":false}]}]},\#(ok)}"#

    static let field = #"{"name":"id","type":"normal","displayType":"editText","result":"number","global":false,"autoEnter":true,"fourDigitYear":false,"maxRepeat":1,"maxCharacters":0,"notEmpty":false,"numeric":true,"timeOfDay":false,"repetitionStart":1,"repetitionEnd":1}"#
    static let layoutMetadata = #"{"response":{"fieldMetaData":[\#(field),{"name":"region","type":"normal","displayType":"popupList","result":"text","valueList":"Regions","global":false,"autoEnter":false,"fourDigitYear":false,"maxRepeat":3,"maxCharacters":20,"notEmpty":true,"numeric":false,"timeOfDay":false,"repetitionStart":1,"repetitionEnd":2}],"portalMetaData":{"notes":[{"name":"Notes::note","type":"normal","displayType":"editText","result":"text","global":false,"autoEnter":false,"fourDigitYear":false,"maxRepeat":1,"maxCharacters":0,"notEmpty":false,"numeric":false,"timeOfDay":false,"repetitionStart":1,"repetitionEnd":1}]},"valueLists":[{"name":"Regions","type":"customList","values":[{"displayValue":"West","value":"West"},{"displayValue":"East","value":"E"}]}]},\#(ok)}"#

    static let record1 = #"{"fieldData":{"id":1,"name":"Masayuki","memo":"a\rb","date":"02/22/2022","Vehicles::name":"x","phone(2)":""},"portalData":{"Contact":[{"recordId":"1","contact_to::summary":"Telephone","contact_to::id":1,"modId":"1"},{"recordId":"2","contact_to::summary":"Mail","contact_to::id":2,"modId":"0"}]},"recordId":"1","modId":"6","portalDataInfo":[{"portalObjectName":"Contact","database":"TestDB","table":"contact_to","foundCount":3,"returnedCount":2}]}"#
    static let record2 = #"{"fieldData":{"id":2,"name":"Ann","memo":"","date":"","Vehicles::name":"","phone(2)":""},"portalData":{"Contact":[]},"recordId":"2","modId":"0","portalDataInfo":[{"database":"TestDB","table":"contact_to","foundCount":0,"returnedCount":0}]}"#
    static let foundSet = #"{"response":{"dataInfo":{"database":"TestDB","layout":"person_layout","table":"person_to","totalRecordCount":3,"foundCount":2,"returnedCount":2},"data":[\#(record1),\#(record2)],"scriptResult.prerequest":"p","scriptError.prerequest":"0","scriptError.presort":"3","scriptResult":"done","scriptError":"0"},\#(ok)}"#
    static let noRecords = #"{"messages":[{"code":"401","message":"No records match the request"}],"response":{}}"#
}

struct Person: Decodable, Equatable, Sendable {
    var id: Int
    var name: String
    var memo: String
}

@Suite struct DecodingMetadataTests {
    /// Each script key read alone, raw and typed, as the others' absence says nothing about it; a key that only
    /// begins like one (`scripted`) is no script result.
    @Test(arguments: ["scriptResult", "scriptError", "scriptResult.prerequest", "scriptError.prerequest", "scriptResult.presort",
                      "scriptError.presort"])
    func aFoundSetsScriptKeyIsReadOnItsOwn(key: String) throws {
        let body = Data(#"{"response":{"data":[\#(Canned.record1)],"scripted":"x","\#(key)":"7"},\#(Canned.ok)}"#.utf8)
        let expected = FMScriptResult(result: key.hasPrefix("scriptResult") ? "7" : nil, error: key.hasPrefix("scriptError") ? "7" : "0")
        let suffix = key.drop { $0 != "." }
        for scripts in [try FMFoundSet(responseBody: body).scripts, try FMTypedFoundSet<Person>(responseBody: body).scripts] {
            #expect(scripts.script == (suffix.isEmpty ? expected : nil), "\(key)")
            #expect(scripts.prerequest == (suffix == ".prerequest" ? expected : nil), "\(key)")
            #expect(scripts.presort == (suffix == ".presort" ? expected : nil), "\(key)")
        }
        let unscripted = Data(#"{"response":{"data":[\#(Canned.record1)],"scripted":"x","script":"y"},\#(Canned.ok)}"#.utf8)
        #expect(try FMFoundSet(responseBody: unscripted).scripts.isEmpty)
    }

    @Test func productInfo() throws {
        let info = try decoded(Endpoints.productInfo(), Canned.productInfo)
        #expect(info == FMProductInfo(name: "FileMaker Data API Engine", buildDate: "07/05/2019", version: "18.0.2.217",
                                      dateFormat: "MM/dd/yyyy", timeFormat: "HH:mm:ss", timeStampFormat: "MM/dd/yyyy HH:mm:ss"))
        let newer = try decoded(Endpoints.productInfo(), Canned.productInfoNew)
        #expect(newer.buildDate == "" && newer.version == "" && newer.dateFormat == "MM/dd/yyyy")
    }

    @Test func databases() throws {
        #expect(try decoded(Endpoints.databases(), Canned.databases) == [FMDatabase(name: "Contacts"), FMDatabase(name: "Sales")])
    }

    @Test func layoutsWithNestedFolders() throws {
        let layouts = try decoded(Endpoints.layouts(), Canned.layouts)
        #expect(layouts.count == 2)
        #expect(layouts[0] == FMLayoutEntry(name: "Contacts", table: "Contacts"))
        #expect(layouts[1].isFolder && layouts[1].children.count == 2)
        #expect(layouts[1].children[1].children == [FMLayoutEntry(name: "Deep")])
        #expect(layouts.flatMap(\.layoutNames) == ["Contacts", "Packages", "Deep"])
        #expect(layouts.flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] } == ["Contacts", "Packages", "Deep"])
        #expect(layouts[0].folderLayoutNames.isEmpty)
    }

    @Test func scriptsWithFoldersAndSeparators() throws {
        let scripts = try decoded(Endpoints.scripts(), Canned.scripts)
        #expect(scripts[0] == FMScriptEntry(name: "GotoFirst"))
        #expect(scripts[1].isFolder && scripts[1].children[1].isSeparator)
        #expect(scripts.flatMap(\.scriptNames) == ["GotoFirst", "script1"])
        #expect(scripts[1].folderScriptNames == ["script1"])
        #expect(try decoded(Endpoints.scripts(), #"{"response":{"scripts":[]},\#(Canned.ok)}"#).isEmpty)
    }

    @Test func layoutMetadataAllKeys() throws {
        let metadata = try decoded(Endpoints.layoutMetadata(layout: "Contacts"), Canned.layoutMetadata)
        #expect(metadata.fieldMetaData.count == 2)
        #expect(metadata.fieldMetaData[0] == FMFieldMetadata(name: "id", type: "normal", displayType: "editText", result: "number",
                                                             autoEnter: true, numeric: true))
        let region = metadata.fieldMetaData[1]
        #expect(region.valueList == "Regions" && region.maxRepeat == 3 && region.maxCharacters == 20)
        #expect(region.notEmpty && region.repetitionEnd == 2 && region.displayType == "popupList")
        #expect(metadata.portalMetaData["notes"]?.first?.name == "Notes::note")
        #expect(metadata.valueLists == [FMValueList(name: "Regions", type: "customList", values: [
            .init(displayValue: "West", value: "West"), .init(displayValue: "East", value: "E"),
        ])])
        #expect(metadata.field(named: "Notes::note")?.result == "text")
    }

    @Test func layoutMetadataWithoutPortalsOrValueLists() throws {
        let metadata = try decoded(Endpoints.layoutMetadata(layout: "L"), #"{"response":{"fieldMetaData":[\#(Canned.field)],"portalMetaData":{}},\#(Canned.ok)}"#)
        #expect(metadata.portalMetaData.isEmpty && metadata.valueLists.isEmpty)
    }

    @Test func wrongShapesAreMalformed() {
        #expect(decodeError(Endpoints.productInfo(), #"{"response":{},\#(Canned.ok)}"#) == "-1007")
        #expect(decodeError(Endpoints.databases(), #"{"response":{"databases":"nope"},\#(Canned.ok)}"#) == "-1007")
        #expect(decodeError(Endpoints.layouts(), #"[1,2]"#) == "-1007")
        #expect(decodeError(Endpoints.scripts(), #"{"response":{"scripts":[{"isFolder":false}]}}"#) == "-1007")
        #expect(decodeError(Endpoints.layoutMetadata(layout: "L"), #"{"response":{"fieldMetaData":{}}}"#) == "-1007")
        #expect(decodeError(Endpoints.productInfo(), #"{"response":{"productInfo":{"name":"x""#) == "-1007")
    }
}

@Suite struct DecodingFoundSetTests {
    @Test func rawRecords() throws {
        let set = try decoded(Endpoints.getRecords(layout: "person_layout"), Canned.foundSet)
        #expect(set.count == 2)
        let first = try #require(set.first)
        #expect(first["recordId"] as? String == "1")
        #expect(first["modId"] as? String == "6")
        let fields = try #require(first["fieldData"] as? [String: Any])
        #expect((fields["id"] as? NSNumber)?.intValue == 1)
        #expect(fields["memo"] as? String == "a\rb")
        let portal = try #require((first["portalData"] as? [String: Any])?["Contact"] as? [[String: Any]])
        #expect(portal.count == 2 && portal[0]["recordId"] as? String == "1")
        #expect(set.dataInfo == FMDataInfo(database: "TestDB", layout: "person_layout", table: "person_to",
                                           totalRecordCount: 3, foundCount: 2, returnedCount: 2))
        #expect(set.scripts == FMScriptResults(script: FMScriptResult(result: "done", error: "0"),
                                               prerequest: FMScriptResult(result: "p", error: "0"),
                                               presort: FMScriptResult(result: nil, error: "3")))
        #expect(set.rawResponse == Data(Canned.foundSet.utf8))
    }

    @Test func typedFromTheRawFoundSet() throws {
        let set = try decoded(Endpoints.find(layout: "L", request: FMFindRequest(["name": "x"])), Canned.foundSet)
        let records = try set.decode(Person.self)
        #expect(records.map(\.fieldData) == [Person(id: 1, name: "Masayuki", memo: "a\rb"), Person(id: 2, name: "Ann", memo: "")])
        #expect(records[0].recordId == "1" && records[0].modId == "6" && records[0].recordID == 1)
        let rows = try #require(records[0].portalData["Contact"])
        #expect(rows == [
            FMPortalRow(recordId: "1", modId: "1", fields: ["contact_to::summary": .string("Telephone"), "contact_to::id": .number(1)]),
            FMPortalRow(recordId: "2", modId: "0", fields: ["contact_to::summary": .string("Mail"), "contact_to::id": .number(2)]),
        ])
        #expect(records[0].portalDataInfo == [FMPortalDataInfo(portalObjectName: "Contact", database: "TestDB", table: "contact_to",
                                                               foundCount: 3, returnedCount: 2)])
        #expect(records[1].portalDataInfo?.first?.portalObjectName == nil)
        #expect(records[1].portalDataInfo?.first?.portalName == "contact_to")
        #expect(records[1].portalData["Contact"] == [])
    }

    @Test func typedPortalRows() throws {
        struct Contact: Decodable, Equatable {
            var recordId: String
            var summary: String
            enum CodingKeys: String, CodingKey { case recordId, summary = "contact_to::summary" }
        }
        let set = try decoded(Endpoints.getRecords(as: Person.self, layout: "L"), Canned.foundSet)
        let rows = try #require(set.records.first?.portalData["Contact"])
        #expect(try rows.map { try $0.decode(Contact.self) } == [Contact(recordId: "1", summary: "Telephone"), Contact(recordId: "2", summary: "Mail")])
        #expect(rows[0]["contact_to::id"]?.intValue == 1)
        struct Wrong: Decodable { var missing: String }
        do { _ = try rows[0].decode(Wrong.self); Issue.record("expected a throw") } catch let error as FMError { #expect(error.code == "-1007") }
    }

    @Test func typedStraightFromBytes() throws {
        let set = try decoded(Endpoints.getRecords(as: Person.self, layout: "L"), Canned.foundSet)
        #expect(set.records.count == 2 && set.records[1].fieldData.name == "Ann")
        #expect(set.dataInfo?.foundCount == 2)
        #expect(set.scripts.presort?.error == "3")
        let one = try decoded(Endpoints.getRecord(as: Person.self, layout: "L", recordId: 1),
                              #"{"response":{"dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":9,"foundCount":1,"returnedCount":1},"data":[\#(Canned.record1)]},\#(Canned.ok)}"#)
        #expect(one.records.first?.fieldData == Person(id: 1, name: "Masayuki", memo: "a\rb"))
        let typedFind = try decoded(Endpoints.find(as: Person.self, layout: "L", request: FMFindRequest(["a": "1"])), Canned.foundSet)
        #expect(typedFind.records.count == 2)
    }

    @Test func typedMismatchIsMalformed() throws {
        struct Wrong: Decodable { var id: String }
        let set = try decoded(Endpoints.getRecords(layout: "L"), Canned.foundSet)
        #expect(throws: FMError.self) { try set.decode(Wrong.self) }
        do { _ = try set.decode(Wrong.self) } catch let error as FMError { #expect(error.code == "-1007") }
        #expect(decodeError(Endpoints.getRecords(as: Wrong.self, layout: "L"), Canned.foundSet) == "-1007")
    }

    @Test func fms17StyleRecordsWithoutDataInfoOrPortalModId() throws {
        let body = #"{"response":{"data":[{"fieldData":{"id":"4","name":"Old","memo":""},"portalData":{"p":[{"recordId":"9","T::f":"v"}]},"recordId":"4","modId":"2"}]},\#(Canned.ok)}"#
        let set = try decoded(Endpoints.getRecords(layout: "L"), body)
        #expect(set.dataInfo == nil && set.scripts.isEmpty)
        struct Old: Decodable { var id: String }
        let records = try set.decode(Old.self)
        #expect(records[0].portalData["p"]?.first?.modId == nil)
        #expect(records[0].portalDataInfo == nil)
    }

    @Test func wrongFoundSetShapes() {
        let endpoint = Endpoints.getRecords(layout: "L")
        #expect(decodeError(endpoint, #"{"response":{},\#(Canned.ok)}"#) == "-1007")
        #expect(decodeError(endpoint, #"{"response":{"data":{}}}"#) == "-1007")
        #expect(decodeError(endpoint, #"{"response":{"data":[1,2]}}"#) == "-1007")
        #expect(decodeError(endpoint, #"{"response":[]}"#) == "-1007")
        #expect(decodeError(endpoint, #"{"response":{"data":["#) == "-1007")
        #expect(decodeError(endpoint, #"[]"#) == "-1007")
    }

    @Test func numericIdsAreTolerated() throws {
        let body = #"{"response":{"data":[{"fieldData":{"id":1,"name":"n","memo":""},"portalData":{},"recordId":5,"modId":0}]}}"#
        let records = try decoded(Endpoints.getRecords(as: Person.self, layout: "L"), body).records
        #expect(records[0].recordId == "5" && records[0].modId == "0")
    }
}

@Suite struct DecodingWriteResultTests {
    @Test func createAndDuplicate() throws {
        let reference = try decoded(Endpoints.createRecord(layout: "L", fieldData: [:]), #"{"response":{"recordId":"147","modId":"0"},\#(Canned.ok)}"#)
        #expect(reference == FMRecordReference(recordId: "147", modId: "0"))
        #expect(reference.recordID == 147)
        let scripted = try decoded(Endpoints.duplicateRecord(layout: "L", recordId: 1),
                                   #"{"response":{"recordId":"7","modId":"0","scriptResult":"r","scriptError":"0","scriptError.prerequest":"104"},\#(Canned.ok)}"#)
        #expect(scripted.recordId == "7")
        #expect(scripted.scripts.script == FMScriptResult(result: "r", error: "0"))
        #expect(scripted.scripts.prerequest == FMScriptResult(result: nil, error: "104"))
        #expect(decodeError(Endpoints.createRecord(layout: "L", fieldData: [:]), #"{"response":{"modId":"0"}}"#) == "-1007")
    }

    @Test func editWithNewPortalRecordInfo() throws {
        let result = try decoded(Endpoints.editRecord(layout: "L", recordId: 1, fieldData: [:]),
                                 #"{"response":{"modId":"3","newPortalRecordInfo":[{"tableName":"Vehicles","recordId":"12","modId":"0"}]},\#(Canned.ok)}"#)
        #expect(result == FMEditResult(modId: "3", newPortalRecordInfo: [FMNewPortalRecord(tableName: "Vehicles", recordId: "12", modId: "0")]))
        let plain = try decoded(Endpoints.editRecord(layout: "L", recordId: 1, fieldData: [:]), #"{"response":{"modId":"1"},\#(Canned.ok)}"#)
        #expect(plain.newPortalRecordInfo.isEmpty && plain.scripts.isEmpty)
    }

    @Test func uploadAnswersWithOrWithoutModId() throws {
        let endpoint = Endpoints.uploadContainer(layout: "L", recordId: 1, field: "f", data: Data([1]), fileName: "a")
        #expect(try decoded(endpoint, #"{"response":{"modId":"327"},\#(Canned.ok)}"#).modId == "327")
        #expect(try decoded(endpoint, #"{"response":{},\#(Canned.ok)}"#).modId == "")
    }

    @Test func deleteScriptResults() throws {
        let endpoint = Endpoints.deleteRecord(layout: "L", recordId: 1)
        #expect(try decoded(endpoint, Canned.noRecords.replacingOccurrences(of: "401", with: "0")) == .none)
        let scripted = try decoded(endpoint, #"{"response":{"scriptResult.presort":"s","scriptError.presort":"0"},\#(Canned.ok)}"#)
        #expect(scripted.presort == FMScriptResult(result: "s", error: "0") && scripted.script == nil)
    }

    @Test func runScriptResults() throws {
        let endpoint = Endpoints.runScript(layout: "L", script: "Echo", parameter: "abc")
        #expect(try decoded(endpoint, #"{"response":{"scriptResult":"abc","scriptError":"0"},\#(Canned.ok)}"#) == FMScriptResult(result: "abc", error: "0"))
        #expect(try decoded(endpoint, #"{"response":{"scriptError":"3"},\#(Canned.ok)}"#) == FMScriptResult(result: nil, error: "3"))
        #expect(try decoded(endpoint, #"{"response":{"scriptResult":"x","scriptError":5},\#(Canned.ok)}"#).error == "5")
    }

    @Test func globals() throws {
        #expect(try decoded(Endpoints.setGlobals(["T::g": "1"]), #"{"response":{},\#(Canned.ok)}"#))
        #expect(decodeError(Endpoints.setGlobals(["T::g": "1"]), "not json") == "-1007")
    }
}
