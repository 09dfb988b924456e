import Foundation
import Testing
@testable import SwiftFM

// Contract: `FMFoundSet.foundCount` is the number of records the request matched on all pages, as `dataInfo` says;
// `0` for the empty found set of a 401; `nil` when no `dataInfo` was sent and records were (FileMaker Server 17).

@Suite("A found set's foundCount is what the request matched on all pages")
struct FoundSetFoundCountTests {
    @Test func aPageOfALargerFoundSetCountsTheWholeSet() throws {
        let body = #"{"response":{"dataInfo":{"database":"DB","layout":"L","table":"T","totalRecordCount":900,"foundCount":250,"returnedCount":2},"data":[{"fieldData":{},"portalData":{},"recordId":"1","modId":"0"},{"fieldData":{},"portalData":{},"recordId":"2","modId":"0"}]},"messages":[{"code":"0","message":"OK"}]}"#
        let found = try FMFoundSet(parsing: Data(body.utf8), status: 200)
        #expect(found.count == 2)
        #expect(found.foundCount == 250)
    }

    @Test func theEmptyFoundSetOfA401CountsZero() {
        #expect(FMFoundSet.empty.foundCount == 0)
    }

    @Test func recordsWithoutDataInfoHaveNoCount() {
        #expect(FMFoundSet(records: [["recordId": "1"]], dataInfo: nil).foundCount == nil)
    }
}
