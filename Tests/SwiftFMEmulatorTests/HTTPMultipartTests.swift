import Foundation
import Testing
import SwiftFMEmulator

// The emulator's multipart/form-data parser: binary uploads, several parts, empty and extended file names, and
// malformed or truncated bodies refused.

@Suite("HTTP multipart/form-data parser")
struct HTTPMultipartTests {
    private func body(_ pieces: [Any]) -> Data {
        var data = Data()
        for piece in pieces {
            if let s = piece as? String { data.append(Data(s.utf8)) } else if let d = piece as? Data { data.append(d) }
        }
        return data
    }

    @Test("A file part with binary content, including CR LF and boundary-like bytes")
    func binaryUpload() throws {
        let binary = Data([0x00, 0xFF, 0x0D, 0x0A, 0x2D, 0x2D, 0x0D, 0x0A, 0x2D, 0x2D, 0x58, 0x89, 0x50, 0x4E, 0x47])
            + Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) })
        let data = body([
            "--XyZ\r\n",
            "Content-Disposition: form-data; name=\"upload\"; filename=\"photo.png\"\r\n",
            "Content-Type: image/png\r\n\r\n",
            binary,
            "\r\n--XyZ--\r\n",
        ])
        let parts = try MultipartFormData.parse(body: data, contentType: "multipart/form-data; boundary=XyZ")
        #expect(parts.count == 1)
        #expect(parts[0].name == "upload")
        #expect(parts[0].filename == "photo.png")
        #expect(parts[0].contentType == "image/png")
        #expect(parts[0].data == binary)
        #expect(parts[0].header("content-disposition")?.hasPrefix("form-data") == true)
    }

    @Test("Two parts, a preamble, a quoted boundary and an epilogue")
    func twoParts() throws {
        let data = body([
            "This is a preamble.\r\n",
            "--a b:c\r\n",
            "Content-Disposition: form-data; name=\"modId\"\r\n\r\n",
            "7",
            "\r\n--a b:c\r\n",
            "Content-Disposition: form-data; name=upload; filename=\"na\\\"me.txt\"\r\n",
            "Content-Type: text/plain\r\n\r\n",
            "hello\r\nworld",
            "\r\n--a b:c--\r\nepilogue",
        ])
        let parts = try MultipartFormData.parse(body: data, contentType: "Multipart/Form-Data; charset=utf-8; boundary=\"a b:c\"")
        #expect(parts.map(\.name) == ["modId", "upload"])
        #expect(parts[0].filename == nil)
        #expect(parts[0].contentType == nil)
        #expect(parts[0].data == Data("7".utf8))
        #expect(parts[1].filename == "na\"me.txt")
        #expect(parts[1].data == Data("hello\r\nworld".utf8))
    }

    @Test("Empty part content and an RFC 8187 filename*")
    func emptyAndExtendedFilename() throws {
        let data = body([
            "--b\r\n",
            "Content-Disposition: form-data; name=\"upload\"; filename=\"x\"; filename*=UTF-8''na%C3%AFve.txt\r\n\r\n",
            "\r\n--b--",
        ])
        let parts = try MultipartFormData.parse(body: data, contentType: "multipart/form-data; boundary=b")
        #expect(parts.count == 1)
        #expect(parts[0].filename == "naïve.txt")
        #expect(parts[0].data.isEmpty)
    }

    @Test("Bodies as URLSession and curl build them (boundary from the content type)")
    func boundaryHelper() {
        #expect(MultipartFormData.boundary(fromContentType: "multipart/form-data; boundary=------------------------abc123") == "------------------------abc123")
        #expect(MultipartFormData.boundary(fromContentType: "multipart/form-data; boundary=\"q\"") == "q")
        #expect(MultipartFormData.boundary(fromContentType: "application/json") == nil)
        #expect(MultipartFormData.boundary(fromContentType: "multipart/form-data") == nil)
    }

    @Test("Errors are values, never crashes")
    func errors() {
        let ok = body(["--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b--\r\n"])
        #expect(throws: MultipartFormData.ParseError.notMultipart) {
            try MultipartFormData.parse(body: ok, contentType: "application/json")
        }
        #expect(throws: MultipartFormData.ParseError.missingBoundary) {
            try MultipartFormData.parse(body: ok, contentType: "multipart/form-data")
        }
        #expect(throws: MultipartFormData.ParseError.missingBoundary) {
            try MultipartFormData.parse(body: ok, contentType: "multipart/form-data; boundary=")
        }
        #expect(throws: MultipartFormData.ParseError.missingOpeningBoundary) {
            try MultipartFormData.parse(body: ok, contentType: "multipart/form-data; boundary=other")
        }
        let truncated = body(["--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx, and no end"])
        #expect(throws: MultipartFormData.ParseError.missingFinalBoundary) {
            try MultipartFormData.parse(body: truncated, contentType: "multipart/form-data; boundary=b")
        }
        let noFinalDashes = body(["--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--b"])
        #expect(throws: MultipartFormData.ParseError.missingFinalBoundary) {
            try MultipartFormData.parse(body: noFinalDashes, contentType: "multipart/form-data; boundary=b")
        }
        let headersCut = body(["--b\r\nContent-Disposition: form-data"])
        #expect(throws: MultipartFormData.ParseError.missingFinalBoundary) {
            try MultipartFormData.parse(body: headersCut, contentType: "multipart/form-data; boundary=b")
        }
        let badHeader = body(["--b\r\nno colon\r\n\r\nx\r\n--b--"])
        #expect(throws: MultipartFormData.ParseError.malformedPartHeaders) {
            try MultipartFormData.parse(body: badHeader, contentType: "multipart/form-data; boundary=b")
        }
        #expect(throws: MultipartFormData.ParseError.missingOpeningBoundary) {
            try MultipartFormData.parse(body: Data(), contentType: "multipart/form-data; boundary=b")
        }
    }

    @Test("Random cuts of a valid body never crash")
    func truncations() {
        let full = body([
            "--b\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"f\"\r\nContent-Type: a/b\r\n\r\n",
            Data((0..<300).map { UInt8(truncatingIfNeeded: $0) }),
            "\r\n--b--\r\n",
        ])
        for cut in 0..<full.count {
            _ = try? MultipartFormData.parse(body: full.prefix(cut), contentType: "multipart/form-data; boundary=b")
        }
        #expect((try? MultipartFormData.parse(body: full, contentType: "multipart/form-data; boundary=b"))?.count == 1)
    }
}
