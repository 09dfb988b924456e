import Foundation
import Testing
@testable import SwiftFMEmulator

/// Find and sort parameters (WIRE.md §6.3, §7).
@Suite struct FindParameterTests {
    /// §7: `query` is an array of request objects and `sort` an array of sort objects (§6.3 `_sort`
    /// too). A bare object is not quietly wrapped into an array (a client bug would pass against the
    /// emulator): a wrongly typed parameter is 1708, like `"sort":"x"`.
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

    /// §7: a date alone in a timestamp field finds every timestamp of that day, like the partial
    /// forms `01/2020` and `2020` already did; the full day only matched midnight exactly.
    @Test(arguments: Via.allCases) func dateAloneFindsTheWholeDayOfATimestamp(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        let stamped = try h.create(#"{"name":"Stamped","stamp":"01/15/2020 10:00:00"}"#)
        _ = try h.create(#"{"name":"Next Day","stamp":"01/16/2020 00:00:00"}"#)
        for criterion in ["01/15/2020", "1/15/2020", "01/15/2020 10:00:00"] {
            let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"stamp":"\#(criterion)"}]}"#)
            #expect(a.status == 200, "\(criterion)")
            #expect(a.data.map { $0["recordId"]?.stringValue } == [stamped], "\(criterion)")
        }
        let iso = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"stamp":"2020-01-15"}],"dateformats":2}"#)
        #expect(iso.data.map { $0["recordId"]?.stringValue } == [stamped])
        #expect(h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"stamp":"01/14/2020"}]}"#).code == "401")
    }

    /// §7: `omit` is `"true"`/`"false"`; an object, array or null is 1708, never read as "not omit"
    /// (the request would silently *add* the records it is meant to remove).
    @Test(arguments: Via.allCases) func omitWithAWrongTypeIs1708(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        for value in ["{}", "[]", "null"] {
            let a = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                           body: #"{"query":[{"name":"John"},{"name":"John Doe","omit":\#(value)}]}"#)
            #expect(a.code == "1708", "\(value)")
        }
        let ok = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"John"},{"name":"John Doe","omit":true}]}"#)
        #expect(ok.data.count == 1)
    }
}
