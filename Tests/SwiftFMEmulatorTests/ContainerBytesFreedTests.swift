import Foundation
import Testing
@testable import SwiftFMEmulator

/// A container's bytes are kept while a record (or a session's global) holds them, and no longer: a test suite
/// that creates records, stores files in them and deletes them again must not grow the emulator by every file.
/// Before, deleting a record kept its containers' bytes until the emulator stopped (1,000 rounds of a 1 MB file:
/// 1 GB), and an OData `PATCH` with a base64 container kept the bytes it replaced.
@Suite struct ContainerBytesFreedTests {
    func blobCount(_ emulator: Emulator) -> Int { emulator.core.state.withLock { $0.blobs.count } }

    @Test func deletingARecordFreesItsContainers() throws {
        let h = try Harness()
        try h.login()
        let file = Data(repeating: 7, count: 10_000)
        for round in 0..<5 {
            let id = try h.create(#"{"name":"file \#(round)"}"#)
            let path = "\(h.base)/layouts/Contacts/records/\(id)"
            #expect(upload(h, path: "\(path)/containers/portrait/1", part: "upload", filename: "a.png", data: file).status == 200)
            #expect(blobCount(h.emulator) == 1)
            #expect(h.send("DELETE", path).status == 200)
            #expect(blobCount(h.emulator) == 0, "round \(round)")
        }
    }

    @Test func aDuplicateKeepsTheBytesItShares() throws {
        let h = try Harness()
        try h.login()
        let id = try h.create(#"{"name":"original"}"#)
        let path = "\(h.base)/layouts/Contacts/records/\(id)"
        #expect(upload(h, path: "\(path)/containers/portrait/1", part: "upload", filename: "a.png", data: Data([1, 2, 3])).status == 200)
        let copy = h.send("POST", path, body: "{}")
        #expect(copy.status == 200)
        let copyID = try #require(copy.response["recordId"]?.stringValue)
        #expect(h.send("DELETE", path).status == 200)
        #expect(blobCount(h.emulator) == 1)
        let read = h.send("GET", "\(h.base)/layouts/Contacts/records/\(copyID)", contentType: nil)
        let url = try #require(read.data.first?["fieldData"]?["portrait"]?.stringValue)
        #expect(h.emulator.core.state.withLock { s in s.blobs.keys.contains { url.contains($0) } })
        #expect(h.send("DELETE", "\(h.base)/layouts/Contacts/records/\(copyID)").status == 200)
        #expect(blobCount(h.emulator) == 0)
    }

    @Test func odataReplacesAndDeletesFreeContainers() throws {
        let c = try ODataClient()
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3])
        for round in 0..<3 {
            let body = #"{"photo":"\#(png.base64EncodedString())","name":"round \#(round)"}"#
            #expect(c.send("PATCH", "/Shop/Customers('ALFKI')", body: body).status == 204)
            #expect(blobCount(c.emulator) == 1, "round \(round)")
        }
        #expect(c.sendData("PATCH", "/Shop/Customers('ALFKI')/photo", body: png, headers: [("Content-Type", "image/png")]).status == 204)
        #expect(blobCount(c.emulator) == 1)
        #expect(c.send("PATCH", "/Shop/Customers('ALFKI')", body: #"{"photo":null}"#).status == 204)
        #expect(blobCount(c.emulator) == 0)
        #expect(c.send("PATCH", "/Shop/Customers('OBR')", body: #"{"photo":"\#(png.base64EncodedString())"}"#).status == 204)
        #expect(blobCount(c.emulator) == 1)
        #expect(c.send("DELETE", "/Shop/Customers('OBR')").status == 204)
        #expect(blobCount(c.emulator) == 0)
    }
}

/// An upload that is refused keeps no bytes: a Data API container upload (a missing record, a field that is no
/// container, a repetition out of range) and an OData binary upload (`PATCH {set}({key})/{container}`). Held before the
/// bytes were stored by the write that keeps them; guards that order.
@Suite struct RefusedUploadTests {
    @Test(arguments: ["records/999999/containers/portrait/1", "records/{id}/containers/name/1", "records/{id}/containers/portrait/9"])
    func aRefusedDataAPIUploadKeepsNoBytes(target: String) throws {
        let h = try Harness()
        try h.login()
        let id = try h.create(#"{"name":"refused"}"#)
        let before = h.emulator.core.state.withLock { $0.blobs.count }
        let path = "\(h.base)/layouts/Contacts/" + target.replacingOccurrences(of: "{id}", with: id)
        let answer = upload(h, path: path, part: "upload", filename: "a.png", data: Data([1, 2, 3]))
        #expect(answer.status >= 400, "\(answer.status)")
        #expect(h.emulator.core.state.withLock { $0.blobs.count } == before, "a refused upload's bytes were kept")
    }

    @Test(arguments: ["/Shop/Customers('NOPE')/photo", "/Shop/Customers(99999)/photo", "/Shop/Customers('ALFKI')/city"])
    func aRefusedODataUploadKeepsNoBytes(path: String) throws {
        let c = try ODataClient()
        let before = c.emulator.core.state.withLock { $0.blobs.count }
        let answer = c.sendData("PATCH", path, body: Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]), headers: [("Content-Type", "image/png")])
        #expect(answer.status >= 400, "\(answer.status) \(answer.text)")
        #expect(c.emulator.core.state.withLock { $0.blobs.count } == before, "a refused upload's bytes were kept")
    }
}
