import Foundation
import Testing
@testable import SwiftFM

/// A typed OData page read straight from the bytes (``FileMakerDecoder/decodeMember(_:_:of:)``) answers exactly as
/// the dictionary path does for hostile bodies: the same rows, count and next link, or an error wherever that path
/// gives one.
@Suite("FMOData: typed pages from bytes match the dictionary path")
struct ODataTypedPageParityTests {
    struct Row: Decodable, Equatable {
        let id: Int
        let name: String?
        let score: Double?
    }

    /// The dictionary path, as `ODataEnvelope.typedPage` had it before reading from the bytes.
    static func reference(_ body: Data) -> Result<([Row], Int?, URL?), FMError> {
        do throws(FMError) {
            let object = try ODataEnvelope.object(body, status: 200)
            guard let values = object["value"] as? [Any] else { throw .malformed("no \"value\" array", status: 200) }
            guard let rows = try? FileMakerDecoder().decode([Row].self, from: values) else {
                throw .malformed("rows", status: 200)
            }
            return .success((rows, try ODataEnvelope.count(in: object, status: 200), try ODataEnvelope.nextLink(in: object, status: 200)))
        } catch {
            return .failure(error)
        }
    }

    static let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
    static let deepButAllowed = String(repeating: "[", count: 400) + String(repeating: "]", count: 400)

    static let bodies: [String] = [
        #"{"value":[{"id":1}],"value":"x"}"#,
        #"{"value":"x","value":[{"id":1}]}"#,
        #"{"value":{"id":1}}"#,
        #"{"value":[{"id":1,"id":2}]}"#,
        #"{"value":[{"id":1}],"@odata.count":"2"}"#,
        #"{"value":[{"id":1}],"@odata.count":true}"#,
        #"{"value":[{"id":1}],"@odata.count":1.5}"#,
        #"{"value":[{"id":1}],"@odata.count":2.0}"#,
        #"{"value":[{"id":1}],"@odata.count":1e999}"#,
        #"{"value":[{"id":1}],"@odata.count":9223372036854775808}"#,
        #"{"value":[{"id":1}],"@odata.count":"2","@count":3}"#,
        #"{"value":[{"id":1}],"@foo":1e999}"#,
        #"{"value":[{"id":1}],"@foo":-1e999}"#,
        #"{"value":[{"id":1}],"@foo":1e-999}"#,
        #"{"value":[{"id":1}],"@foo":123456789012345678901234567890}"#,
        #"{"value":[{"id":1}],"@foo":"\ud800"}"#,
        #"{"value":[{"id":1}]} x"#,
        "\u{FEFF}" + #"{"value":[{"id":1}]}"#,
        #"{"value":[{"id":1}],}"#,
        #"{"value":[{"id":1},]}"#,
        #"{"value":[{"id":1}],"@odata.nextLink":"http://other.example/fmi/odata/v4/db/T?$skip=1"}"#,
        #"{"value":[{"id":1}],"@odata.nextLink":5}"#,
        #"{"value":[{"id":1}],"@odata.nextLink":"not a url \u0000"}"#,
        #"{"value":[{"id":1}],"@odata.nextLink":null}"#,
        #"{"value":[{"id":1}],"@x":"# + deep + "}",
        #"{"value":[{"id":1}],"@x":"# + deepButAllowed + "}",
        #"{"value":[{"id":1,"name":"# + deepButAllowed + "}]}",
        #"[{"id":1}]"#,
        "", "null", " ", "{}",
        #"{"value":[]}"#,
        #"{"value":[1]}"#,
        #"{"value":[{"id":"1"}]}"#,
        #"{"value":[{"id":1.0}]}"#,
        #"{"value":[{"id":1e2}]}"#,
        #"{"value":[{"id":12345678901234567890}]}"#,
        #"{"value":[{"id":1,"name":1}]}"#,
        #"{"value":[{"id":1,"score":1e400}]}"#,
        #"{"value":[{"id":1,"score":0.30000000000000004}]}"#,
        #"{"value":[{"id":1,"score":"1e3"}]}"#,
        #"{"value":[{"id":1,"score":12345678901234567890123}]}"#,
        #"{"value":[{"id":1,"name":""}]}"#,
        #"{"value":[{"id":1,"score":""}]}"#,
        #"{"value":[{"id":1,"name(1)":"a"}]}"#,
        #"{"val\u0075e":[{"id":1}]}"#,
    ]

    @Test(arguments: bodies.indices)
    func sameAnswerAsTheDictionaryPath(_ index: Int) {
        let body = Data(Self.bodies[index].utf8)
        let fast = Result { () throws(FMError) in try ODataEnvelope.typedPage(Row.self, body, status: 200) }
        switch (fast, Self.reference(body)) {
        case (.success(let page), .success(let expected)):
            #expect(page.rows == expected.0, "rows differ for \(Self.bodies[index].prefix(120))")
            #expect(page.count == expected.1, "count differs for \(Self.bodies[index].prefix(120))")
            #expect(page.nextLink == expected.2, "next link differs for \(Self.bodies[index].prefix(120))")
        case (.failure, .failure):
            break
        case (.success(let page), .failure(let error)):
            Issue.record("the bytes path read \(page) where the dictionary path fails (\(error.message)): \(Self.bodies[index].prefix(120))")
        case (.failure(let error), .success):
            Issue.record("the bytes path fails (\(error.message)) where the dictionary path reads: \(Self.bodies[index].prefix(120))")
        }
    }

    /// Invalid UTF-8 in a member the rows do not use: both paths refuse the body.
    @Test func invalidUTF8InAnAnnotation() {
        var body = Data(#"{"value":[{"id":1}],"@x":""#.utf8)
        body.append(contentsOf: [0xC3, 0x28, 0xFF])
        body.append(contentsOf: Data(#""}"#.utf8))
        let fast = Result { () throws(FMError) in try ODataEnvelope.typedPage(Row.self, body, status: 200) }
        guard case .failure = Self.reference(body) else { return }
        #expect(throws: FMError.self) { try fast.get() }
    }
}
