import Foundation

// Container fields: `GET …/{set}({key})/{field}/$value` down, a binary `PATCH …/{set}({key})/{field}` up.

extension FMOData {
    /// `{set}({key})/{field}`, or `-1002`.
    static func fieldPath(_ set: String, key: FMODataKey, field: String) -> (String, FMError?) {
        let (path, invalid) = recordPath(set, key: key)
        guard invalid == nil else { return (path, invalid) }
        guard !field.isEmpty else { return (path, .invalidArgument("An empty field name")) }
        return (path + "/" + ODataText.encodePath(field), nil)
    }

    /// `Content-Disposition` for an upload: `inline; filename=name` for a plain ASCII token (the form
    /// FileMaker parses reliably), else `inline; filename*=UTF-8''…` (RFC 5987).
    static func contentDisposition(_ fileName: String) -> String {
        let token = !fileName.isEmpty && fileName.utf8.allSatisfy { byte in
            byte > 0x20 && byte < 0x7F && !"\"\\;,()<>@:/[]?={}".utf8.contains(byte)
        }
        if token { return "inline; filename=" + fileName }
        let encoded = fileName.utf8.map { byte -> String in
            let plain = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "!#$&+-.^_`|~".utf8.contains(byte)
            return plain ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }.joined()
        return "inline; filename*=UTF-8''" + (encoded.isEmpty ? "Untitled" : encoded)
    }

    func downloadCall<Value>(from set: String, key: FMODataKey, field: String, sink: BodySink?,
                             decode: @escaping @Sendable (Endpoint<Value>.Response) throws -> Value) -> ODataCall<Value> {
        let (path, invalid) = Self.fieldPath(set, key: key, field: field)
        // `*/*`: with `Accept: application/octet-stream` FileMaker Server 22 sends the file's name instead of its bytes.
        return ODataCall(method: .get, path: path + "/$value", kind: "{set}({key})/{field}/$value", accept: "*/*",
                         accepting: { $0 == 200 }, invalid: invalid, sink: sink, isTransfer: true, decode: decode)
    }

    func uploadCall(in set: String, key: FMODataKey, field: String, body: Endpoint<Int>.Body, fileName: String) -> ODataCall<Int> {
        let (path, invalid) = Self.fieldPath(set, key: key, field: field)
        var call = ODataCall(method: .patch, path: path, kind: "{set}({key})/{field}", body: body, invalid: invalid, isTransfer: true) {
            try Self.affectedRows($0)
        }
        call.extraHeaders = ["Content-Disposition": Self.contentDisposition(fileName)]
        return call
    }

    /// Downloads a container field's content (`GET /{db}/{set}({key})/{field}/$value`) into memory, under
    /// ``FMConfiguration/maxResponseBytes`` (`-1011` past it) and ``FMConfiguration/containerTimeout``.
    /// Retried like a read.
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - field: the container field (or its `FMFID:…`).
    ///   - completion: the bytes (empty for an empty container) or `nil`, and the code.
    /// - Returns: a handle to cancel the download.
    @discardableResult
    public func downloadContainer(from set: String, key: FMODataKey, field: String,
                                  completion: sending @escaping (Data?, String) -> Void) -> FMRequest {
        send(downloadCall(from: set, key: key, field: field, sink: nil) { $0.body }) { completion($0.value, $0.code) }
    }

    /// Downloads a container field's content into memory. Throws ``FMError``.
    public func downloadContainer(from set: String, key: FMODataKey, field: String) async throws -> Data {
        try await sendAsync(downloadCall(from: set, key: key, field: field, sink: nil) { $0.body })
    }

    /// Downloads a container field's content into `fileURL`, streamed (never held in memory, not capped by
    /// ``FMConfiguration/maxResponseBytes``): written to a partial file next to it and moved over `fileURL`
    /// when complete, so `fileURL` is never left half-written.
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - field: the container field.
    ///   - fileURL: where to write the bytes (replaced).
    ///   - progress: called with (bytes written, expected total or `-1` when unknown) on a serial queue
    ///     SwiftFM owns for this download (labelled `SwiftFM.progress`; never the transport's thread, never
    ///     ``callbackQueue``): one report at a time, in order, coalesced when the callback is slower than the bytes
    ///     (the latest count is reported next, the last one always). It never holds the transfer back, and may
    ///     cancel it; the completion does not wait for it (a report may run after the completion).
    ///   - completion: `fileURL` or `nil` (`-1009` when the file cannot be written), and the code.
    /// - Returns: a handle to cancel the download.
    @discardableResult
    public func downloadContainer(from set: String, key: FMODataKey, field: String, to fileURL: URL,
                                  progress: (@Sendable (Int64, Int64) -> Void)? = nil,
                                  completion: sending @escaping (URL?, String) -> Void) -> FMRequest {
        downloadToFile(from: set, key: key, field: field, to: fileURL, progress: progress, inline: false) { completion($0.value, $0.code) }
    }

    /// Downloads a container field's content into `fileURL`, streamed; returns `fileURL`. Throws ``FMError``.
    @discardableResult
    public func downloadContainer(from set: String, key: FMODataKey, field: String, to fileURL: URL,
                                  progress: (@Sendable (Int64, Int64) -> Void)? = nil) async throws -> URL {
        let handle = FMRequest()
        return try await api.bridge(attaching: handle) { completion in
            downloadToFile(from: set, key: key, field: field, to: fileURL, progress: progress, inline: true, handle: handle,
                           completion: completion)
        }
    }

    private func downloadToFile(from set: String, key: FMODataKey, field: String, to fileURL: URL,
                                progress: (@Sendable (Int64, Int64) -> Void)?, inline: Bool, handle: FMRequest? = nil,
                                completion: @escaping (Result<URL, FMError>) -> Void) -> FMRequest {
        let partial = DataAPI.partialFile(for: fileURL)
        let sink = BodySink.file(partial, cap: configuration.maxResponseBytes, progress: progress.map(ProgressReports.init))
        var call = downloadCall(from: set, key: key, field: field, sink: sink) { _ in () }
        call.invalid = call.invalid ?? UploadSource.notAFileURL(fileURL, "download destination")
        let logContext = api.context.callerLogContext()
        let logger = api.context.sender.logger
        // The number of the request whose answer was written, for the line below (only kept when it can be logged).
        let sent = logger.isEnabled(.error) ? Locked<UInt64?>(nil) : nil
        let (method, kind) = (call.method.rawValue, call.kind)
        return send(call, attachingTo: handle, inline: inline, sentAs: sent, logContext: logContext) { result in
            let answered = result.failure == nil
            let settled = DataAPI.settle(result, partial: partial, at: fileURL)
            // The request was answered, so no line of its own says the download failed: this one does, naming it.
            if answered, let error = settled.failure {
                logger.logCallFailed("\(method) odata/\(kind)", error, requestID: sent?.value, context: logContext)
            }
            // The engine bound the answer's outcome; a file that could not be placed is the call's error now.
            FMError.withCurrent(settled.failure) { completion(settled) }
        }
    }

    /// Uploads a file into a container field (`PATCH /{db}/{set}({key})/{field}`), its bytes streamed from
    /// `fileURL` as the request body with `Content-Type: mimeType` and `Content-Disposition: inline;
    /// filename=…`. Claris documents this binary form for images (GIF, PNG, JPEG, TIFF) and PDF. An unreadable
    /// file, or anything but a regular file (a FIFO, a device, a directory), completes with `-1009` without
    /// sending anything. The file is sent as it was when the upload started: over ``FMCurlTransport``, one that
    /// shrinks, grows or is written to meanwhile stops the upload before its last byte, with `-1009` naming the
    /// file (the server never gets a body mixing two versions); over any other transport, a private copy taken under
    /// the same rule is sent (a file that changes while it is copied fails with `-1009` naming it, nothing sent). Not
    /// retried (a write).
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - field: the container field.
    ///   - fileURL: the local file.
    ///   - fileName: the name FileMaker stores (default: the URL's last path component).
    ///   - mimeType: the `Content-Type` (`nil` or empty: inferred from the first bytes, then the extension).
    ///   - completion: the number of records changed or `nil`, and the code.
    /// - Returns: a handle to cancel the upload.
    @discardableResult
    public func uploadContainer(in set: String, key: FMODataKey, field: String, fileURL: URL, fileName: String? = nil,
                                mimeType: String? = nil, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        send(fileUploadCall(in: set, key: key, field: field, fileURL: fileURL, fileName: fileName, mimeType: mimeType)) {
            completion($0.value, $0.code)
        }
    }

    /// Uploads a file into a container field, streamed. Throws ``FMError``.
    @discardableResult
    public func uploadContainer(in set: String, key: FMODataKey, field: String, fileURL: URL, fileName: String? = nil,
                                mimeType: String? = nil) async throws -> Int {
        try await sendAsync(fileUploadCall(in: set, key: key, field: field, fileURL: fileURL, fileName: fileName, mimeType: mimeType))
    }

    /// Uploads bytes into a container field (`PATCH /{db}/{set}({key})/{field}`); see
    /// ``uploadContainer(in:key:field:fileURL:fileName:mimeType:completion:)``.
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - field: the container field.
    ///   - data: the bytes.
    ///   - fileName: the name FileMaker stores.
    ///   - mimeType: the `Content-Type` (`nil` or empty: inferred).
    ///   - completion: the number of records changed or `nil`, and the code.
    /// - Returns: a handle to cancel the upload.
    @discardableResult
    public func uploadContainer(in set: String, key: FMODataKey, field: String, data: Data, fileName: String,
                                mimeType: String? = nil, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        let type = Self.given(mimeType) ?? Multipart.mimeType(for: data, fileName: fileName)
        return send(uploadCall(in: set, key: key, field: field, body: .raw(data, contentType: type), fileName: fileName)) {
            completion($0.value, $0.code)
        }
    }

    /// Uploads bytes into a container field. Throws ``FMError``.
    @discardableResult
    public func uploadContainer(in set: String, key: FMODataKey, field: String, data: Data, fileName: String,
                                mimeType: String? = nil) async throws -> Int {
        let type = Self.given(mimeType) ?? Multipart.mimeType(for: data, fileName: fileName)
        return try await sendAsync(uploadCall(in: set, key: key, field: field, body: .raw(data, contentType: type), fileName: fileName))
    }

    /// A caller's MIME type, `nil` when empty (inferred then, as for the Data API's upload).
    private static func given(_ mimeType: String?) -> String? {
        mimeType?.isEmpty == false ? mimeType : nil
    }

    private func fileUploadCall(in set: String, key: FMODataKey, field: String, fileURL: URL, fileName: String?,
                                mimeType: String?) -> ODataCall<Int> {
        let name = fileName ?? fileURL.lastPathComponent
        // Only a regular file is read (a FIFO would block this thread, a device never end); else -1009, nothing sent.
        let head: Data
        switch UploadSource.opened(fileURL) {
        case .success(let source):
            defer { try? source.handle.close() }
            head = Self.given(mimeType) == nil ? ((try? source.handle.read(upToCount: 64)) ?? Data()) : Data()
        case .failure(let error):
            var call = uploadCall(in: set, key: key, field: field, body: .none, fileName: name)
            call.invalid = call.invalid ?? error
            return call
        }
        // The first bytes decide (as the Data API's upload).
        let type = Self.given(mimeType) ?? Multipart.mimeType(for: head, fileName: name)
        return uploadCall(in: set, key: key, field: field, body: .file(fileURL, contentType: type), fileName: name)
    }
}
