import Foundation

/// Builds the `multipart/form-data` body of a container upload and infers MIME types.
enum Multipart {
    /// A fresh boundary: `SwiftFM-` and a random UUID (never occurs in a file by chance).
    static func makeBoundary() -> String {
        "SwiftFM-" + UUID().uuidString
    }

    /// The body with one file part named `name` (FileMaker requires `upload`).
    static func body(boundary: String, name: String = "upload", fileName: String, mimeType: String, data: Data) -> Data {
        let (head, tail) = frame(boundary: boundary, name: name, fileName: fileName, mimeType: mimeType)
        var body = Data()
        body.reserveCapacity(data.count + head.count + tail.count)
        body.append(head)
        body.append(data)
        body.append(tail)
        return body
    }

    /// What comes before and after the file's bytes in a one-part body.
    static func frame(boundary: String, name: String = "upload", fileName: String, mimeType: String) -> (head: Data, tail: Data) {
        let head = "--\(boundary)\r\n"
            + "Content-Disposition: form-data; name=\"\(quoted(name))\"; filename=\"\(quoted(fileName))\"\r\n"
            + "Content-Type: \(mimeType)\r\n\r\n"
        return (Data(head.utf8), Data("\r\n--\(boundary)--\r\n".utf8))
    }

    /// Writes the one-part body around the content of `source` into a new private temporary file
    /// (``UploadSource/copy(_:head:tail:stop:copied:)``: in 1 MiB chunks, never whole in memory, the file as it was when
    /// opened or `-1009` naming it). Returns the temporary file; the caller removes it.
    ///
    /// `stop` is asked before each chunk: once it says `true` (the call was cancelled or ran out of time), the copy
    /// ends there, the temporary file is removed and ``Stopped`` is thrown. `copied` is told the temporary file and
    /// the source's bytes copied so far, after each chunk.
    static func writeBody(boundary: String, fileName: String, mimeType: String, source: URL,
                          stop: () -> Bool = { false }, copied: ((URL, Int64) -> Void)? = nil) throws -> URL {
        let (head, tail) = frame(boundary: boundary, fileName: fileName, mimeType: mimeType)
        return try UploadSource.copy(source, head: head, tail: tail, stop: stop, copied: copied)
    }

    /// ``writeBody(boundary:fileName:mimeType:source:stop:copied:)`` was told to stop.
    typealias Stopped = UploadSource.Stopped

    /// Makes a header parameter value safe: quotes become `%22`, line breaks are dropped.
    static func quoted(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r", "\n": continue
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: - MIME types

    /// The MIME type of a file: the content's signature first, then the file name's extension,
    /// then `application/octet-stream`. A ZIP signature defers to a known extension (`.docx`, `.xlsx` …).
    static func mimeType(for data: Data, fileName: String) -> String {
        let fromExtension = mimeType(forExtension: (fileName as NSString).pathExtension)
        if let sniffed = mimeType(sniffing: data) {
            if sniffed == "application/zip", let fromExtension { return fromExtension }
            return sniffed
        }
        return fromExtension ?? "application/octet-stream"
    }

    /// The MIME type announced by the first bytes, when they are a known signature.
    static func mimeType(sniffing data: Data) -> String? {
        let bytes = [UInt8](data.prefix(16))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + signature.count && Array(bytes[offset..<offset + signature.count]) == signature
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool { starts(Array(text.utf8), at: offset) }

        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if ascii("GIF87a") || ascii("GIF89a") { return "image/gif" }
        if ascii("%PDF-") { return "application/pdf" }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { return "image/tiff" }
        if ascii("BM"), bytes.count >= 14 { return "image/bmp" }
        if ascii("RIFF"), ascii("WEBP", at: 8) { return "image/webp" }
        if ascii("RIFF"), ascii("WAVE", at: 8) { return "audio/wav" }
        if ascii("RIFF"), ascii("AVI ", at: 8) { return "video/x-msvideo" }
        if ascii("ftyp", at: 4) {
            if ascii("heic", at: 8) || ascii("heix", at: 8) || ascii("mif1", at: 8) || ascii("msf1", at: 8) { return "image/heic" }
            if ascii("qt  ", at: 8) { return "video/quicktime" }
            if ascii("M4A ", at: 8) { return "audio/mp4" }
            return "video/mp4"
        }
        if ascii("ID3") || starts([0xFF, 0xFB]) || starts([0xFF, 0xF3]) || starts([0xFF, 0xF2]) { return "audio/mpeg" }
        if ascii("OggS") { return "audio/ogg" }
        if ascii("fLaC") { return "audio/flac" }
        if starts([0x50, 0x4B, 0x03, 0x04]) { return "application/zip" }
        if starts([0x1F, 0x8B]) { return "application/gzip" }
        if starts([0x00, 0x00, 0x01, 0x00]) { return "image/x-icon" }
        if ascii("{\\rtf") { return "application/rtf" }
        return nil
    }

    /// The MIME type of a file name extension (case-insensitive), when it is a common one.
    static func mimeType(forExtension ext: String) -> String? {
        switch ext.lowercased() {
        case "png": return "image/png"
        case "jpg", "jpeg", "jpe": return "image/jpeg"
        case "gif": return "image/gif"
        case "pdf": return "application/pdf"
        case "tif", "tiff": return "image/tiff"
        case "bmp": return "image/bmp"
        case "webp": return "image/webp"
        case "heic", "heif": return "image/heic"
        case "svg": return "image/svg+xml"
        case "ico": return "image/x-icon"
        case "mp4", "m4v": return "video/mp4"
        case "mov": return "video/quicktime"
        case "avi": return "video/x-msvideo"
        case "mp3": return "audio/mpeg"
        case "m4a": return "audio/mp4"
        case "wav": return "audio/wav"
        case "ogg": return "audio/ogg"
        case "flac": return "audio/flac"
        case "txt", "text": return "text/plain"
        case "csv": return "text/csv"
        case "htm", "html": return "text/html"
        case "json": return "application/json"
        case "xml": return "application/xml"
        case "rtf": return "application/rtf"
        case "zip": return "application/zip"
        case "gz": return "application/gzip"
        case "doc": return "application/msword"
        case "docx": return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        case "xls": return "application/vnd.ms-excel"
        case "xlsx": return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        case "ppt": return "application/vnd.ms-powerpoint"
        case "pptx": return "application/vnd.openxmlformats-officedocument.presentationml.presentation"
        case "key", "pages", "numbers": return "application/zip"
        case "fmp12": return "application/octet-stream"
        default: return nil
        }
    }
}
