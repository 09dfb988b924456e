import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: a container upload's file name, whatever it holds (quotes, CR, LF, backslashes, non-ASCII), stays inside
// the `filename` parameter of its part's `Content-Disposition`: the Data API's multipart part has exactly its two
// headers, and OData's `Content-Disposition` header stays one well-formed value.

@Suite("Upload file name cannot add part headers")
struct UploadFileNameCannotAddPartHeadersTests {
    static let hostile = ["a\"\r\nContent-Type: text/html\r\n\r\n<script>.png", "x\\", "a\"; name=\"other.png", "Café\u{0}\t.png"]

    /// Held.
    @Test(arguments: hostile)
    func theNameStaysInItsParameter(_ name: String) throws {
        let harness = UploadSourceMustBeARegularFileTests.harness()
        let recorder = Recorder<String>(expecting: 2)
        harness.api.uploadContainer(layout: "L", recordId: 1, field: "photo", data: Data("bytes".utf8), fileName: name) { _, code in
            recorder.record(code)
        }
        FMOData(sharing: harness.api).uploadContainer(in: "contacts", key: .number(1), field: "photo", data: Data("bytes".utf8),
                                                      fileName: name) { _, code in recorder.record(code) }
        #expect(recorder.wait() == ["0", "0"])
        let requests = harness.stub.requests
        try #require(requests.count == 2)
        let body = try #require(requests[0].httpBody)
        let head = try #require(body.range(of: Data("\r\n\r\n".utf8))).lowerBound
        let lines = String(decoding: body[..<head], as: UTF8.self).components(separatedBy: "\r\n")
        #expect(lines.count == 3, "\(lines)")   // the boundary, Content-Disposition, Content-Type
        #expect(lines.dropFirst().filter { $0.hasPrefix("Content-Type:") }.count == 1)
        #expect(lines.count == 3 && lines[1].hasPrefix("Content-Disposition: form-data; name=\"upload\"; filename=\"")
                && lines[1].hasSuffix("\"") && lines[1].filter { $0 == "\"" }.count == 4, "\(lines)")
        let disposition = try #require(requests[1].value(forHTTPHeaderField: "Content-Disposition"))
        #expect(disposition.hasPrefix("inline; filename*=UTF-8''") && !disposition.contains("\"") && !disposition.contains(";name"),
                "\(disposition)")
    }
}
