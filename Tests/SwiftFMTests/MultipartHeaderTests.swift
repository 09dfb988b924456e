import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The caller's `mimeType` and file name of a container upload are sanitised before they go into the
/// part's headers: a value with CR/LF cannot add part headers or end the header block.
@Suite("Multipart part headers")
struct MultipartHeaderTests {
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
