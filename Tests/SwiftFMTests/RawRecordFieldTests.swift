import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// A raw record's field reads in one call, typed by the caller (`nil` when missing or of another type), in a
/// record and in a portal row; the records stay `[[String: Any]]`.
@Suite("Raw record fields")
struct RawRecordFieldTests {
    /// A raw record's field in one call, typed by the caller; the records stay `[[String: Any]]`.
    @Test func aRawRecordFieldReadsInOneCall() throws {
        let body = #"{"response":{"data":[{"fieldData":{"name":"Nina","rating":5,"born":""},"portalData":{"albums":[{"recordId":"3","albums::title":"One"}]},"recordId":"1","modId":"2"}]},"messages":[{"code":"0","message":"OK"}]}"#
        let found = try FMFoundSet(responseBody: Data(body.utf8))
        let record = try #require(found.records.first)
        #expect(record.field("name", as: String.self) == "Nina")
        #expect(record.field("rating", as: Int.self) == 5)
        #expect(record.field("rating", as: String.self) == nil)
        #expect(record.field("missing", as: String.self) == nil)
        let row = try #require((record["portalData"] as? [String: Any])?["albums"] as? [[String: Any]]).first
        #expect(row?.field("albums::title", as: String.self) == "One")
    }
}
