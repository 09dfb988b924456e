import Foundation
import Testing
@testable import SwiftFM

// Payloads, MIME types and values: JSON payloads serialise or are refused without a crash (nil, NaN, non-JSON
// types); content sniffing beats the file extension; multipart bytes and quoting.

@Suite struct ModelsPayloadTests {
    private func serialized(_ object: [String: Any]) -> Result<String, FMError> {
        JSONPayload.serialize(object).map { data in
            canonical((try? JSONSerialization.jsonObject(with: data)) ?? "<bad>")
        }
    }

    private func code(_ object: [String: Any]) -> String? {
        if case .failure(let error) = JSONPayload.serialize(object) { return error.code }
        return nil
    }

    @Test func plainValuesSerialise() throws {
        let text = try serialized(["s": "x", "i": 7, "d": 2.5, "b": true, "n": NSNumber(value: 1),
                                   "a": [1, "two"], "o": ["k": "v"], "i64": Int64(9), "u8": UInt8(3),
                                   "dec": Decimal(string: "1.25")!, "sub": "abc".prefix(2)]).get()
        #expect(text == canonical(["s": "x", "i": 7, "d": 2.5, "b": true, "n": 1, "a": [1, "two"], "o": ["k": "v"],
                                   "i64": 9, "u8": 3, "dec": 1.25, "sub": "ab"] as [String: Any]))
    }

    @Test func nsNumberOneStaysANumber() throws {
        let data = try JSONPayload.serialize(["n": NSNumber(value: 1), "b": true]).get()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text == #"{"b":true,"n":1}"#)
    }

    @Test func optionalsAreUnwrapped() throws {
        let some: String? = "v"
        let nested: Int?? = 3
        #expect(try serialized(["a": some as Any, "b": nested as Any]).get() == canonical(["a": "v", "b": 3] as [String: Any]))
    }

    @Test func nilAndNullAreRejected() {
        let none: String? = nil
        #expect(code(["fieldData": ["name": none as Any]]) == "-1002")
        #expect(code(["fieldData": ["name": NSNull()]]) == "-1002")
        #expect(code(["query": [["a": "1"], ["b": NSNull()]]]) == "-1002")
        if case .failure(let error) = JSONPayload.serialize(["fieldData": ["name": NSNull()]]) {
            #expect(error.message.contains("$.fieldData.name"))
            #expect(error.message.contains("1708"))
        }
    }

    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func nonFiniteNumbersAreRejected(_ value: Double) {
        #expect(code(["fieldData": ["x": value]]) == "-1002")
        #expect(code(["fieldData": ["x": Float(value)]]) == "-1002")
        #expect(code(["fieldData": ["x": NSNumber(value: value)]]) == "-1002")
    }

    @Test func nonJSONTypesAreRejected() {
        #expect(code(["fieldData": ["when": Date()]]) == "-1002")
        #expect(code(["fieldData": ["url": URL(fileURLWithPath: "/")]]) == "-1002")
        #expect(code(["fieldData": [1: "int key"] as [Int: Any]]) == "-1002")
        #expect(code(["fieldData": ["data": Data([1])]]) == "-1002")
    }

    @Test func factoriesRejectBadPayloadsWithoutCrashing() {
        let none: Int? = nil
        #expect(Endpoints.createRecord(layout: "L", fieldData: ["a": Double.nan]).invalid?.code == "-1002")
        #expect(Endpoints.createRecord(layout: "L", payload: ["fieldData": ["a": none as Any]]).invalid?.code == "-1002")
        #expect(Endpoints.editRecord(layout: "L", recordId: 1, fieldData: ["a": NSNull()]).invalid?.code == "-1002")
        #expect(Endpoints.editRecord(layout: "L", recordId: 1, payload: ["fieldData": ["a": Date()]]).invalid?.code == "-1002")
        #expect(Endpoints.find(layout: "L", payload: ["query": [["a": Double.infinity]]]).invalid?.code == "-1002")
        #expect(Endpoints.createRecord(layout: "L", fieldData: [:], portalData: ["p": [["T::f": NSNull()]]]).invalid?.code == "-1002")
    }
}

@Suite struct ModelsMimeTests {
    private func bytes(_ prefix: [UInt8], padTo count: Int = 16) -> Data {
        Data(prefix + [UInt8](repeating: 0, count: max(0, count - prefix.count)))
    }

    @Test func sniffsSignatures() {
        #expect(Multipart.mimeType(sniffing: bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])) == "image/png")
        #expect(Multipart.mimeType(sniffing: bytes([0xFF, 0xD8, 0xFF, 0xE0])) == "image/jpeg")
        #expect(Multipart.mimeType(sniffing: Data("GIF89a......".utf8)) == "image/gif")
        #expect(Multipart.mimeType(sniffing: Data("GIF87a......".utf8)) == "image/gif")
        #expect(Multipart.mimeType(sniffing: Data("%PDF-1.7\n".utf8)) == "application/pdf")
        #expect(Multipart.mimeType(sniffing: bytes([0x49, 0x49, 0x2A, 0x00])) == "image/tiff")
        #expect(Multipart.mimeType(sniffing: bytes([0x4D, 0x4D, 0x00, 0x2A])) == "image/tiff")
        #expect(Multipart.mimeType(sniffing: Data("RIFF\0\0\0\0WEBPVP8 ".utf8)) == "image/webp")
        #expect(Multipart.mimeType(sniffing: Data("RIFF\0\0\0\0WAVEfmt ".utf8)) == "audio/wav")
        #expect(Multipart.mimeType(sniffing: Data("\0\0\0\u{18}ftypheic\0\0".utf8)) == "image/heic")
        #expect(Multipart.mimeType(sniffing: Data("\0\0\0\u{18}ftypqt  \0\0".utf8)) == "video/quicktime")
        #expect(Multipart.mimeType(sniffing: Data("\0\0\0\u{18}ftypisom\0\0".utf8)) == "video/mp4")
        #expect(Multipart.mimeType(sniffing: Data("ID3\u{3}\0\0\0".utf8)) == "audio/mpeg")
        #expect(Multipart.mimeType(sniffing: bytes([0x50, 0x4B, 0x03, 0x04])) == "application/zip")
        #expect(Multipart.mimeType(sniffing: bytes([0x1F, 0x8B, 0x08])) == "application/gzip")
        #expect(Multipart.mimeType(sniffing: Data("BM".utf8) + Data(count: 20)) == "image/bmp")
        #expect(Multipart.mimeType(sniffing: Data("hello world".utf8)) == nil)
        #expect(Multipart.mimeType(sniffing: Data()) == nil)
    }

    @Test func contentBeatsExtension() {
        let png = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(Multipart.mimeType(for: png, fileName: "photo.jpg") == "image/png")
        #expect(Multipart.mimeType(for: png, fileName: "noext") == "image/png")
    }

    @Test func extensionWhenContentIsUnknown() {
        #expect(Multipart.mimeType(for: Data("a,b\n".utf8), fileName: "table.CSV") == "text/csv")
        #expect(Multipart.mimeType(for: Data("hello".utf8), fileName: "notes.txt") == "text/plain")
        #expect(Multipart.mimeType(for: Data("<svg/>".utf8), fileName: "icon.svg") == "image/svg+xml")
        #expect(Multipart.mimeType(for: Data("x".utf8), fileName: "blob") == "application/octet-stream")
        #expect(Multipart.mimeType(for: Data(), fileName: "empty.unknownext") == "application/octet-stream")
    }

    @Test func zipDefersToAKnownExtension() {
        let zip = bytes([0x50, 0x4B, 0x03, 0x04])
        #expect(Multipart.mimeType(for: zip, fileName: "report.docx") == "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        #expect(Multipart.mimeType(for: zip, fileName: "sheet.xlsx") == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        #expect(Multipart.mimeType(for: zip, fileName: "archive") == "application/zip")
    }

    @Test func multipartBodyBytesAndQuoting() {
        let body = Multipart.body(boundary: "B", fileName: "a \"b\"\r\n.txt", mimeType: "text/plain", data: Data("hi".utf8))
        #expect(String(decoding: body, as: UTF8.self) ==
                "--B\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"a %22b%22.txt\"\r\nContent-Type: text/plain\r\n\r\nhi\r\n--B--\r\n")
        let unicode = Multipart.body(boundary: "B", fileName: "résumé 日本.pdf", mimeType: "application/pdf", data: Data())
        #expect(String(decoding: unicode, as: UTF8.self).contains("filename=\"résumé 日本.pdf\""))
        #expect(Multipart.makeBoundary() != Multipart.makeBoundary())
    }
}

@Suite struct ModelsValueTests {
    @Test func sortWire() {
        #expect(FMSort.ascending("a").order.wireValue == "ascend")
        #expect(FMSort.descending("a").order.wireValue == "descend")
        #expect(FMSort(field: "a", order: .valueList("VL")).order.wireValue == "VL")
        #expect(FMSort(field: "a") == .ascending("a"))
        #expect(FMSort("a") == .ascending("a"))
        #expect(FMSort("a", order: .descend) == .descending("a"))
    }

    @Test func scriptCallsAndOptions() {
        let call: FMScriptCall = "Echo"
        #expect(call == FMScriptCall("Echo", parameter: nil))
        #expect(FMScriptOptions().isEmpty)
        let options = FMScriptOptions(script: FMScriptCall("A", parameter: "1"), prerequest: "B", presort: FMScriptCall("C", parameter: ""))
        #expect(options.entries.map { "\($0.0)=\($0.1)" } == ["script=A", "script.param=1", "script.prerequest=B", "script.presort=C", "script.presort.param="])
    }

    @Test func queries() {
        #expect(canonical(FMQuery(["a": "1"]).wireObject) == #"{"a":"1"}"#)
        #expect(canonical(FMQuery.omit(["a": "1"]).wireObject) == #"{"a":"1","omit":"true"}"#)
        #expect(FMFindRequest(["a": "1"], limit: 5).queries == [FMQuery(["a": "1"])])
    }

    @Test func dateFormats() {
        #expect(FMDateFormat.us.rawValue == 0)
        #expect(FMDateFormat.fileLocale.rawValue == 1)
        #expect(FMDateFormat.iso8601.rawValue == 2)
    }

    @Test func fieldValues() {
        #expect(FMFieldValue.number(7).stringValue == "7")
        #expect(FMFieldValue.number(2.5).stringValue == "2.5")
        #expect(FMFieldValue.string("12").intValue == 12)
        #expect(FMFieldValue.string("").doubleValue == nil)
        #expect(FMFieldValue.number(3).intValue == 3)
        #expect(FMFieldValue.number(3.5).intValue == nil)
        #expect((FMFieldValue.string("a").anyValue as? String) == "a")
        #expect(FMFieldValue.null.anyValue is NSNull)
    }

    @Test func emptyFoundSets() throws {
        #expect(FMFoundSet.empty.isEmpty && FMFoundSet.empty.count == 0 && FMFoundSet.empty.first == nil)
        #expect(FMFoundSet.empty.dataInfo == nil && FMFoundSet.empty.scripts.isEmpty)
        struct Fields: Decodable { var name: String }
        #expect(try FMFoundSet.empty.decode(Fields.self).isEmpty)
        #expect(FMTypedFoundSet<Fields>.empty.records.isEmpty)
    }

    @Test func recordIdsAsIntegers() {
        #expect(FMRecordReference(recordId: "147", modId: "0").recordID == 147)
        #expect(FMRecordReference(recordId: "x", modId: "0").recordID == nil)
        #expect(FMPortalRow(recordId: "3", modId: "1", fields: [:]).recordID == 3)
    }
}
