import Foundation

extension DataAPI {
    /// Uploads a file into a container field (`POST …/records/{recordId}/containers/{field}/{repetition}`,
    /// multipart part `upload`).
    ///
    /// The MIME type is `mimeType` when given, else inferred from the content (PNG, JPEG, GIF, PDF, TIFF,
    /// BMP, WebP, HEIC, MP4/QuickTime, MP3, WAV, ZIP, …), else from the file name's extension, else
    /// `application/octet-stream`. An unreadable file, or anything but a regular file (a FIFO, a device, a
    /// directory; a symlink to a regular file is fine), completes with `-1009` without sending anything. The
    /// multipart body is assembled in a temporary file when the call is sent (bounded memory); a cancel or the
    /// deadline stops that copy at the next MiB (the call completes once, with `-1005` or `-1004`, and the
    /// temporary file is removed). Like every container transfer, the call is bounded by
    /// ``FMConfiguration/containerTimeout``.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - field: the container field name.
    ///   - repetition: the repetition, 1-based.
    ///   - fileURL: the local file to upload.
    ///   - fileName: the name FileMaker stores (default: the URL's last path component).
    ///   - mimeType: the part's `Content-Type` (default: inferred).
    ///   - completion: the edit result (``FMEditResult/modId`` is `""` when the server sends none) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1, fileURL: URL,
                                fileName: String? = nil, mimeType: String? = nil,
                                completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        let endpoint = Endpoints.uploadContainer(layout: layout, recordId: recordId, field: field, repetition: repetition,
                                                 fileURL: fileURL, fileName: fileName, mimeType: mimeType)
        return perform(endpoint) { completion($0.value, $0.code) }
    }

    /// Uploads bytes into a container field; see ``uploadContainer(layout:recordId:field:repetition:fileURL:fileName:mimeType:completion:)-(_,Int,_,_,_,_,_,_)``.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - recordId: the record id.
    ///   - field: the container field name.
    ///   - repetition: the repetition, 1-based.
    ///   - data: the file's bytes.
    ///   - fileName: the name FileMaker stores (its extension also helps infer the MIME type).
    ///   - mimeType: the part's `Content-Type` (default: inferred).
    ///   - completion: the edit result or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1, data: Data,
                                fileName: String, mimeType: String? = nil,
                                completion: sending @escaping (FMEditResult?, String) -> Void) -> FMRequest {
        let endpoint = Endpoints.uploadContainer(layout: layout, recordId: recordId, field: field, repetition: repetition,
                                                 data: data, fileName: fileName, mimeType: mimeType)
        return perform(endpoint) { completion($0.value, $0.code) }
    }

    /// Downloads a container's content from its streaming URL (the value of the container field).
    ///
    /// The server usually answers the first `GET` with `302` and a streaming-session cookie; SwiftFM
    /// follows `Location` itself (up to 5 redirects), sending the cookies back to the same origin (scheme,
    /// host, port) only. No `Authorization` is sent. A redirect to a non-HTTP URL is `-1007`. A URL that has
    /// expired (read under a session that is gone) is answered with a redirect loop: that is
    /// ``FMError/ClientCode/containerURLExpired`` (`-1014`), whose message says to read the record again for a
    /// fresh URL; a chain of more than 5 redirects that never comes back to a URL is `-1007`. A loop is found however
    /// the server spells the URL on each turn: the scheme and host in any case, the default port written or not, a
    /// percent-encoded unreserved character (`%7E`) or the character itself (`~`).
    ///
    /// - Parameters:
    ///   - url: the container URL.
    ///   - completion: the bytes or `nil`, and the code.
    /// - Returns: a handle that cancels the download, whichever hop is in flight.
    @discardableResult
    public func downloadContainer(url: URL, completion: sending @escaping (Data?, String) -> Void) -> FMRequest {
        followContainer(url: url, cookie: nil, hopsLeft: Endpoints.maxContainerRedirects) { result, _ in
            completion(result.value, result.code)
        }
    }

    /// Downloads a container's content into a local file, streamed: the bytes go to disk as they arrive
    /// (bounded memory, not capped by ``FMConfiguration/maxResponseBytes``), into a temporary file next to
    /// `fileURL` that replaces it when the download is complete; on failure the partial file is removed and
    /// `fileURL` is left as it was. Bounded by ``FMConfiguration/containerTimeout``.
    ///
    /// - Parameters:
    ///   - url: the container URL.
    ///   - fileURL: where to write the bytes.
    ///   - progress: called with (bytes written so far, expected total or `-1` when unknown) on a serial queue
    ///     SwiftFM owns for this download (labelled `SwiftFM.progress`; never the transport's thread, never
    ///     ``callbackQueue``): one report at a time, in order, coalesced when the callback is slower than the bytes
    ///     (the latest count is reported next, the last one always). It never holds the transfer back, and may
    ///     cancel it; the completion does not wait for it (a report may run after the completion). A download whose
    ///     answer broke off is sent again under ``FMConfiguration/retry``: its reports then count from 0 again.
    ///   - completion: `fileURL` or `nil`, and the code (`-1009` when the file cannot be written, `-1002` when
    ///     `fileURL` is not a file URL).
    /// - Returns: a handle that cancels the download.
    @discardableResult
    public func downloadContainer(url: URL, to fileURL: URL, progress: (@Sendable (Int64, Int64) -> Void)? = nil,
                                  completion: sending @escaping (URL?, String) -> Void) -> FMRequest {
        downloadContainerResult(url: url, to: fileURL, progress: progress) { completion($0.value, $0.code) }
    }

    /// The streamed download to a file, reporting a `Result`.
    @discardableResult
    func downloadContainerResult(url: URL, to fileURL: URL, progress: (@Sendable (Int64, Int64) -> Void)?, handle: FMRequest? = nil,
                                 completion: @escaping (Result<URL, FMError>) -> Void) -> FMRequest {
        if let error = UploadSource.notAFileURL(fileURL, "download destination") {
            // Refused before sending, through the pipeline like any call refused so: one error line names it.
            let refused = Endpoint<URL>(.get, .absolute(url), [], auth: .none, invalid: error) { _ in throw error }
            return perform(refused, options: CallOptions(accepting: { _ in false }, handle: handle)) { completion($0) }
        }
        let partial = Self.partialFile(for: fileURL)
        let sink = BodySink.file(partial, cap: configuration.maxResponseBytes, progress: progress.map(ProgressReports.init))
        let logContext = context.callerLogContext()   // where the caller is: the download's line may be logged on our queue
        return followContainer(url: url, cookie: nil, hopsLeft: Endpoints.maxContainerRedirects, request: handle, sink: sink,
                               logContext: logContext) { [self] result, requestID in
            let answered = result.failure == nil
            let settled = Self.settle(result.map { _ in () }, partial: partial, at: fileURL)
            // The last hop was answered, so no line of its own says the download failed: this one does, naming it.
            if answered, let error = settled.failure {
                context.sender.logger.logCallFailed("GET {container}", error, requestID: requestID, context: logContext)
            }
            completion(settled)
        }
    }

    /// Follows a container URL hop by hop under one cancel handle; `completion` runs once, on the callback queue.
    /// With a file sink, the last hop's body is in the sink's file and the bytes delivered are empty.
    /// Every hop shares one deadline, ``FMConfiguration/containerTimeout`` from the first.
    ///
    /// A redirect loop is an expired URL (``FMError/containerURLExpired``): a redirect back to a URL already asked
    /// for with the same cookie (nothing can change on the next turn), or redirects run out on a chain that came
    /// back to a URL it had asked for (a server that sets a new cookie on every turn). URLs are compared however the
    /// server spells them (``URL/comparableForm``: the scheme's and host's case, the default port written
    /// or not, `%7E` or `~`, `/a/./b` or `/a/x/../b`), so a server that spells the URL anew on every turn is a loop too. `visited` holds the
    /// URLs asked for so far (their comparable form), with the cookie each was sent.
    ///
    /// `logContext`: the caller's logging context, read as the download began (the first hop, on the caller's thread or
    /// task); every hop's lines and the line of a download its redirects end carry it. `completion` also gets the
    /// number (`fm.request_id`) of the last hop, whose answer ended the download.
    func followContainer(url: URL, cookie: String?, hopsLeft: Int, request: FMRequest? = nil, sink: BodySink? = nil,
                         endsAt: DispatchTime? = nil, visited: [(url: String, cookie: String?)] = [],
                         logContext: [String: String]? = nil,
                         completion: @escaping (consuming Result<Data, FMError>, _ lastHop: UInt64) -> Void) -> FMRequest {
        let handle = request ?? FMRequest()
        let logContext = logContext ?? context.callerLogContext()
        let statuses = Endpoints.containerHopStatuses
        let endsAt = endsAt ?? Deadline.fromNow(configuration.containerTimeout)
        var options = CallOptions(accepting: { statuses.contains($0) }, handle: handle)
        options.sink = sink
        options.isTransfer = true
        options.endsAt = endsAt
        // Drawn here so that the line of a download this hop's redirect ends names the hop, as its own lines do.
        let requestID = context.newRequestID()
        options.requestID = requestID
        options.logContext = logContext
        return perform(Endpoints.containerHop(url: url, cookie: cookie), options: options) { [self] (result: consuming Result<Endpoints.ContainerHop, FMError>) in
            // The bytes are handed over, not shared (see ``Delivery``): taken out of the hop, which ends here.
            guard case .success(.redirect(let next, let nextCookie)) = result else { return completion(Self.bytes(of: result), requestID) }
            // Cancelled after this hop delivered its redirect: the download ends as cancelled (no line: a cancel logs
            // no error), as the next hop would, whatever this redirect says (a loop, or the last one allowed).
            if handle.isCancelled { return FMError.withCurrent(.cancelled) { completion(.failure(.cancelled), requestID) } }
            let visited = visited + [(url.comparableForm, cookie)]
            let target = next.comparableForm
            // Ended here, in the completion of a hop that succeeded: the failure is bound as FMError.current for the
            // caller's (value?, code) completion, as a call's own failure is.
            // The last hop was answered (a redirect), so no line of its own says the download failed: this one does,
            // with the hop's `fm.request_id`.
            func fail(_ error: FMError) {
                context.sender.logger.logCallFailed("GET {container}", error, requestID: requestID, context: logContext)
                FMError.withCurrent(error) { completion(.failure(error), requestID) }
            }
            if visited.contains(where: { $0.url == target && $0.cookie == nextCookie }) {
                return fail(.containerURLExpired)
            }
            guard hopsLeft > 0 else {
                let looped = visited.contains { $0.url == target }
                return fail(looped ? .containerURLExpired : .malformed("too many redirects downloading a container", status: nil))
            }
            _ = followContainer(url: next, cookie: nextCookie, hopsLeft: hopsLeft - 1, request: handle, sink: sink,
                                endsAt: endsAt, visited: visited, logContext: logContext, completion: completion)
        }
    }

    /// The bytes of a hop that is not a redirect (which ends here).
    private static func bytes(of hop: consuming Result<Endpoints.ContainerHop, FMError>) -> Result<Data, FMError> {
        switch consume hop {
        case .success(.data(let data)): .success(data)
        case .success(.redirect): .failure(.malformed("a container redirect where bytes were expected", status: nil))
        case .failure(let error): .failure(error)
        }
    }

    /// The hidden partial file a streamed download into `fileURL` writes first, beside it:
    /// `.{name}.swiftfm-{UUID}.part`, the name cut (at a character) so that the whole stays within the 255 bytes
    /// a file name may have — any destination name the file system accepts can be downloaded to.
    static func partialFile(for fileURL: URL) -> URL {
        let suffix = ".swiftfm-\(UUID().uuidString).part"
        let room = 255 - 1 - suffix.utf8.count
        var name = ""
        for character in fileURL.lastPathComponent {
            guard name.utf8.count + character.utf8.count <= room else { break }
            name.append(character)
        }
        return fileURL.deletingLastPathComponent().appendingPathComponent("." + name + suffix)
    }

    /// A streamed download's end: a success moves the partial file over `fileURL`; a failure removes it. The
    /// call may fail after its exchange wrote the whole body (a cancel or the deadline just after the last
    /// byte): that partial file must not stay either.
    static func settle(_ result: Result<Void, FMError>, partial: URL, at fileURL: URL) -> Result<URL, FMError> {
        switch result {
        case .success:
            return place(partial, at: fileURL)
        case .failure(let error):
            try? FileManager.default.removeItem(at: partial)
            return .failure(error)
        }
    }

    /// Moves a completed download over `fileURL` (replacing it); removes the partial file on failure.
    static func place(_ partial: URL, at fileURL: URL) -> Result<URL, FMError> {
        guard FileManager.default.fileExists(atPath: partial.path) else {
            return .failure(FMError(code: FMError.ClientCode.fileError, message: "The download produced no file"))
        }
        guard rename(partial.path, fileURL.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: partial)
            return .failure(FMError(code: FMError.ClientCode.fileError, message: "Cannot write \(fileURL.path)", underlying: reason))
        }
        return .success(fileURL)
    }

    static func write(_ data: Data, to fileURL: URL) -> Result<URL, FMError> {
        do {
            try data.write(to: fileURL, options: .atomic)
            return .success(fileURL)
        } catch {
            return .failure(FMError(code: FMError.ClientCode.fileError, message: "Cannot write \(fileURL.path)",
                                    underlying: String(describing: error)))
        }
    }
}
