// Contract: a container upload (E16, `POST …/layouts/{layout}/records/{id}/containers/{field}/{rep}`) reaches only a
// container field placed on the layout in the URL. A field of the layout's table that the layout does not show is
// 102 "Field is missing" (HTTP 500), as every other write of a field not on the layout is (WIRE.md §1.2 "The fields
// … must be on the layout", §6.1, §10.1; SCHEMA.md: "A field not on the layout is error 102 on write"), and the
// record is left as it was.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ContainerFieldOnLayoutRuleTests {
    @Test("An upload to a container field the layout does not show is 102 and changes nothing", arguments: Via.allCases)
    func uploadToFieldOffTheLayout(_ via: Via) throws {
        let h = try Harness(via: via)
        try h.login()
        // `Slim` shows only `name`; `portrait` is a container field of its table (Contacts).
        let refused = upload(h, path: "\(h.base)/layouts/Slim/records/1/containers/portrait/1", part: "upload",
                             filename: "a.png", data: Data([1, 2, 3]))
        #expect(refused.status == 500)
        #expect(refused.code == "102")
        #expect(refused.message == "Field is missing")
        #expect(refused.isEmptyResponse)

        // The record is untouched: same modId, container still empty.
        let read = h.send("GET", "\(h.base)/layouts/Contacts/records/1", contentType: nil)
        #expect(read.data.first?["modId"]?.stringValue == "0")
        #expect(read.data.first?["fieldData"]?["portrait"] == .string(""))

        // The same field through a layout that shows it is accepted.
        let accepted = upload(h, path: "\(h.base)/layouts/Contacts/records/1/containers/portrait/1", part: "upload",
                              filename: "a.png", data: Data([1, 2, 3]))
        #expect(accepted.status == 200)
        #expect(accepted.response["modId"]?.stringValue == "1")
    }
}
