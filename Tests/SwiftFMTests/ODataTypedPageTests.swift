import Foundation
import Testing
@testable import SwiftFM

// A typed OData page is decoded straight from the answer's bytes whenever its rows read, with or without a count
// and a next link; a row that does not read falls back to the path that names the row and the field.

private struct Artist: Decodable, Equatable {
    let name: String
    let rating: Int?
}

@Suite("OData typed pages: decoded from the bytes")
struct ODataTypedPageTests {
    @Test func aLastPageWithoutCountOrLinkIsReadFromTheBytes() throws {
        let body = Data(#"{"@odata.context":"x","value":[{"@id":"a","name":"Ada","rating":5},{"name":"Bo","rating":""}]}"#.utf8)
        let page = try #require(try ODataEnvelope.typedPageFromBytes(Artist.self, body, status: 200))
        #expect(page.rows == [Artist(name: "Ada", rating: 5), Artist(name: "Bo", rating: nil)])
        #expect(page.count == nil)
        #expect(page.nextLink == nil)
    }

    @Test func countAndNextLinkComeWithTheRows() throws {
        let body = Data(#"{"@odata.count":"7","value":[{"name":"Ada"}],"@odata.nextLink":"https://h/fmi/odata/v4/DB/Artists?$skip=1"}"#.utf8)
        let page = try #require(try ODataEnvelope.typedPageFromBytes(Artist.self, body, status: 200))
        #expect(page.rows == [Artist(name: "Ada", rating: nil)])
        #expect(page.count == 7)
        #expect(page.nextLink?.absoluteString == "https://h/fmi/odata/v4/DB/Artists?$skip=1")
        let same = try ODataEnvelope.typedPage(Artist.self, body, status: 200)
        #expect(same.rows == page.rows && same.count == page.count && same.nextLink == page.nextLink)
    }

    @Test func aRowThatDoesNotReadIsNamedByTheSlowPath() {
        let body = Data(#"{"value":[{"name":"Ada"},{"name":12.5e400}]}"#.utf8)
        #expect((try? ODataEnvelope.typedPageFromBytes(Artist.self, body, status: 200)) == nil)
        let bad = Data(#"{"value":[{"name":"Ada"},{"rating":"x"}]}"#.utf8)
        #expect((try? ODataEnvelope.typedPageFromBytes(Artist.self, bad, status: 200)) ?? nil == nil)
        #expect(throws: FMError.self) { try ODataEnvelope.typedPage(Artist.self, bad, status: 200) }
        do {
            _ = try ODataEnvelope.typedPage(Artist.self, bad, status: 200)
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse)
            #expect(error.message.contains("row 1"), "\(error.message)")
        }
    }

    @Test func aCountThatIsNotANumberIsStillRefused() {
        let body = Data(#"{"@odata.count":true,"value":[]}"#.utf8)
        #expect(throws: FMError.self) { try ODataEnvelope.typedPageFromBytes(Artist.self, body, status: 200) }
    }
}
