import Foundation
import Testing
@testable import SwiftFMEmulator

/// Review findings on find and sort parameters (WIRE.md §6.3, §7).
@Suite struct ReviewFindingsFindTests {
    /// §7: `query` is an array of request objects and `sort` an array of sort objects (§6.3 `_sort`
    /// too). A bare object was quietly wrapped into an array, so a client bug passed against the
    /// emulator; a wrongly typed parameter is 1708 like `"sort":"x"` already was.
    @Test(arguments: Via.allCases) func queryAndSortMustBeArrays(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        for body in [#"{"query":{"name":"John"}}"#,
                     #"{"query":[{"name":"John"}],"sort":{"fieldName":"name","sortOrder":"descend"}}"#] {
            let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: body)
            #expect(a.status == 400, "\(body)")
            #expect(a.code == "1708", "\(body)")
            #expect(a.isEmptyResponse)
        }
        let sortObject = percentEncoded(#"{"fieldName":"name","sortOrder":"descend"}"#)
        let range = h.send("GET", "\(h.base)/layouts/Contacts/records?_sort=\(sortObject)", contentType: nil)
        #expect(range.code == "1708")
        // The documented forms work.
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find",
                       body: #"{"query":[{"name":"John"}],"sort":[{"fieldName":"name","sortOrder":"descend"}]}"#).status == 200)
        let sortArray = percentEncoded(#"[{"fieldName":"name","sortOrder":"descend"}]"#)
        #expect(h.send("GET", "\(h.base)/layouts/Contacts/records?_sort=\(sortArray)", contentType: nil).status == 200)
    }
}
