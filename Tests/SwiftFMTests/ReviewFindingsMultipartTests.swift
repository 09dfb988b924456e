import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// Review finding: the caller's `mimeType` of a container upload went verbatim into the part's
/// `Content-Type` line, so a value with CR/LF added part headers (or ended the header block and injected
/// content). The file name was already sanitised; the MIME type was not.
@Suite("Review findings: multipart part headers")
struct ReviewFindingsMultipartTests {
    @Test(arguments: ["text/plain\r\nContent-Disposition: form-data; name=\"other\"", "image/png\n\nINJECTED", "text/plain\u{0}x"])
    func aMIMETypeWithControlCharactersIsRefusedWithoutSending(mimeType: String) {
        let harness = Harness()
        let recorder = Recorder<String>(queueKey: Harness.key)
        harness.api.uploadContainer(layout: "Bands", recordId: 1, field: "photo", data: Data("hello".utf8),
                                    fileName: "a.txt", mimeType: mimeType) { _, code in recorder.record(code) }
        #expect(recorder.wait() == [FMError.ClientCode.invalidArgument])
        #expect(harness.stub.requests.isEmpty)
    }

    @Test func anOrdinaryMIMETypeIsSentInThePart() throws {
        let endpoint = Endpoints.uploadContainer(layout: "Bands", recordId: 1, field: "photo", data: Data("hello".utf8),
                                                 fileName: "a.txt", mimeType: "text/plain; charset=utf-8")
        #expect(endpoint.invalid == nil)
        guard case .multipart(let body, _) = endpoint.body else { Issue.record("not multipart"); return }
        #expect(String(decoding: body, as: UTF8.self).contains("\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello"))
    }
}
