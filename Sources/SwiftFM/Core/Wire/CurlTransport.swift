import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if os(Linux)
internal import CFMCurl
import Glibc

// MARK: - The libcurl transport (Linux)

/// A transport on the system's libcurl (`libcurl.so.4`, the library FoundationNetworking already links on
/// Linux), loaded at run time: the build needs no curl headers and no system package.
///
/// One curl multi handle per transport, driven by a thread of its own (`curl_multi_poll`, woken by
/// `curl_multi_wakeup`); connections are kept alive and reused, at most `maxConnectionsPerHost` to one host and
/// port (requests beyond it wait in the transport, in order, and their idle time counts from when they start;
/// SwiftFM's own limits keep that queue empty). Answers are
/// decoded by libcurl (`gzip`, `deflate`, and what else the library was built with); the bytes SwiftFM sees,
/// and caps, are the decoded ones. libcurl's callbacks only copy bytes out: the answer's head, its bytes and
/// the end reach ``FMTransportEvents`` on a queue of the transfer's own, never on the multi thread, and a
/// body arriving faster than SwiftFM takes it pauses the transfer (bounded memory).
///
/// No redirect is followed, no cookie is kept, no cache; `Expect: 100-continue` is never sent; HTTP/1.1.
/// A request that may change data (every method but `GET` and `HEAD`, and a `GET` that runs a script) is
/// never sent twice: when a reused connection dies before any byte of its answer, libcurl would send it again
/// on a new one; this transport refuses that, and the call fails with `URLError(.networkConnectionLost)`
/// (SwiftFM's retry policy decides). Reads are sent again, as libcurl does. A silence longer than
/// `idleTimeout` while connecting, sending or receiving (measured per header line and per chunk of body)
/// ends the exchange with `URLError(.timedOut)`;
/// `cancel()` ends it with `URLError(.cancelled)`.
///
/// Where libcurl cannot be loaded (a static SDK, a system without it) ``isAvailable`` is `false` and every
/// request fails with `URLError(.unsupportedURL)` saying so; ``DataAPI/init(configuration:callbackQueue:tokenStore:logger:now:)``
/// then uses ``FMURLSessionTransport``.
public final class FMCurlTransport: FMTransport, SendsBodyFileAsItWas, @unchecked Sendable {
    /// `SendsBodyFileAsItWas`: a body file is compared with its snapshot as it is sent (its last byte goes out only if the
    /// file is still what it was), so an OData upload hands this transport the caller's file.
    var sendsBodyFileAsItWas: Bool { true }

    // @unchecked: every stored property is immutable; the engine keeps its state behind its lock or on its thread.
    let engine: CurlEngine?
    private let loadError: String?
    private let settings: CurlSettings
    /// The TLS options every request is sent with.
    var tls: FMTLSOptions { settings.tls }
    /// The longest silence allowed while connecting, sending or receiving, in seconds.
    var idleTimeout: TimeInterval { settings.idleTimeout }
    /// The proxy every request goes through (`nil`: the environment's, as curl reads it).
    var proxy: URL? { settings.proxy }

    /// Whether the system's libcurl (`libcurl.so.4`, at least 7.68) could be loaded.
    public static var isAvailable: Bool { CurlLibrary.standard.error == nil }

    /// The loaded libcurl's version (`"7.88.1"`), or `nil` when it could not be loaded.
    public static var libraryVersion: String? {
        guard isAvailable, let version = fmcurl_version() else { return nil }
        return String(cString: version)
    }

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - idleTimeout: the longest silence allowed while connecting, sending or receiving, in seconds (the
    ///     whole call is bounded by SwiftFM's own deadline, ``FMConfiguration/timeout``).
    ///   - maxConnectionsPerHost: the most requests in flight, and so connections open, at once to one host and
    ///     port (at least 1; the requests past it wait, in order, and their idle time counts from when they
    ///     start); also the number of idle connections kept for reuse.
    ///   - tls: a CA bundle trusted instead of the system store, pinned public keys, a client certificate
    ///     (``FMTLSOptions``); chain and host verification are always on.
    ///   - proxy: the HTTP proxy every request goes through; `nil`: the environment's (`HTTPS_PROXY`,
    ///     `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`), as curl reads it.
    public convenience init(idleTimeout: TimeInterval = 60, maxConnectionsPerHost: Int = 64, tls: FMTLSOptions = FMTLSOptions(), proxy: URL? = nil) {
        self.init(idleTimeout: idleTimeout, maxConnectionsPerHost: maxConnectionsPerHost, tls: tls, proxy: proxy, library: .standard)
    }

    /// - Parameter maxConnectionAge: the longest, in whole seconds, a kept-alive connection may have been idle
    ///   and still be used (`nil`: libcurl's default, 118 s). Tests that count connections set it long, so a
    ///   test task the loaded machine left waiting between two requests still finds its connection.
    init(idleTimeout: TimeInterval, maxConnectionsPerHost: Int, tls: FMTLSOptions = FMTLSOptions(), proxy: URL? = nil,
         maxConnectionAge: Int? = nil, library: CurlLibrary) {
        let idle = idleTimeout.isFinite ? max(0.001, idleTimeout) : Deadline.longest
        settings = CurlSettings(idleTimeout: idle, maxConnectionsPerHost: max(1, maxConnectionsPerHost), tls: tls, proxy: proxy,
                                maxConnectionAge: maxConnectionAge.map { max(0, $0) })
        if let error = library.error {
            loadError = error
            engine = nil
        } else {
            loadError = nil
            engine = CurlEngine(maxConnectionsPerHost: settings.maxConnectionsPerHost)
        }
    }

    deinit {
        // Transfers in flight finish; the engine's thread ends after the last of them.
        engine?.close()
    }

    /// Starts the request; see ``FMTransport/send(_:events:)``.
    public func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        let transfer = CurlTransfer(request: request, events: events)
        guard let engine else {
            transfer.fail(URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "libcurl could not be loaded (\(loadError ?? "unknown reason")); use FMURLSessionTransport",
            ]))
            return transfer
        }
        transfer.engine = engine
        if let error = transfer.prepare(settings) {
            transfer.release()
            transfer.fail(error)
            return transfer
        }
        engine.add(transfer)
        return transfer
    }
}

/// What every transfer of a transport is configured with.
struct CurlSettings: Sendable {
    var idleTimeout: TimeInterval
    var maxConnectionsPerHost: Int
    var tls = FMTLSOptions()
    var proxy: URL?
    /// `CURLOPT_MAXAGE_CONN`, in seconds; `nil`: libcurl's default (118 s).
    var maxConnectionAge: Int?
}

// MARK: - Loading libcurl

/// The system's libcurl, loaded once per process.
struct CurlLibrary: Sendable {
    /// Why it could not be loaded, or `nil` when it is.
    let error: String?

    /// `libcurl.so.4`, loaded on first use.
    static let standard = CurlLibrary(loading: "libcurl.so.4")

    /// The library at `path`: loaded for the standard name; another path (the tests' missing library) is only
    /// tried, never used (libcurl is loaded once per process).
    static func at(_ path: String) -> CurlLibrary {
        path == "libcurl.so.4" ? standard : CurlLibrary(probing: path)
    }

    private init(loading path: String) {
        var buffer = [CChar](repeating: 0, count: 512)
        let status = fmcurl_load(path, &buffer, buffer.count)
        error = status == 0 ? nil : Self.string(buffer)
    }

    private init(probing path: String) {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            error = dlerror().map { String(cString: $0) } ?? "\(path) could not be loaded"
            return
        }
        dlclose(handle)
        error = CurlLibrary.standard.error
    }

    private static func string(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

// MARK: - curl's stable ABI: the option numbers SwiftFM uses (curl.h)

enum CurlOption {
    // CURLOPTTYPE_LONG + n
    static let nosignal: Int32 = 99
    static let noprogress: Int32 = 43
    static let nobody: Int32 = 44
    static let post: Int32 = 47
    static let followLocation: Int32 = 52
    static let httpGet: Int32 = 80
    static let httpVersion: Int32 = 84
    static let sslVerifyPeer: Int32 = 64
    static let sslVerifyHost: Int32 = 81
    static let tcpKeepAlive: Int32 = 213
    static let connectTimeoutMS: Int32 = 156
    static let suppressConnectHeaders: Int32 = 265
    static let forbidReuse: Int32 = 75
    static let maxAgeConn: Int32 = 288
    static let proxy: Int32 = 10004
    static let sslCert: Int32 = 10025
    static let caInfo: Int32 = 10065
    static let sslCertType: Int32 = 10086
    static let sslKey: Int32 = 10087
    static let sslKeyType: Int32 = 10088
    static let caPath: Int32 = 10097
    static let pinnedPublicKey: Int32 = 10230
    // CURLOPTTYPE_OBJECTPOINT / STRINGPOINT (10000) + n
    static let url: Int32 = 10002
    static let errorBuffer: Int32 = 10010
    static let writeData: Int32 = 10001
    static let readData: Int32 = 10009
    static let httpHeader: Int32 = 10023
    static let headerData: Int32 = 10029
    static let customRequest: Int32 = 10036
    static let acceptEncoding: Int32 = 10102
    static let privateData: Int32 = 10103
    static let copyPostFields: Int32 = 10165
    static let seekData: Int32 = 10168
    static let prereqData: Int32 = 10313
    // CURLOPTTYPE_FUNCTIONPOINT (20000) + n
    static let writeFunction: Int32 = 20011
    static let readFunction: Int32 = 20012
    static let headerFunction: Int32 = 20079
    static let seekFunction: Int32 = 20167
    static let prereqFunction: Int32 = 20312
    // CURLOPTTYPE_OFF_T (30000) + n
    static let postFieldSizeLarge: Int32 = 30120

    // curl_multi_setopt: CURLOPTTYPE_LONG + n
    static let multiMaxConnects: Int32 = 6

    /// CURL_HTTP_VERSION_1_1
    static let http11 = 2
    /// CURL_WRITEFUNC_PAUSE / CURL_READFUNC_ABORT
    static let writePause = 0x1000_0001
    static let readAbort = 0x1000_0000
    /// CURLPAUSE_CONT
    static let pauseContinue: Int32 = 0
    /// CURL_ERROR_SIZE
    static let errorSize = 256
}

// MARK: - One exchange

/// One request and its answer: the handle SwiftFM can cancel, libcurl's easy handle, and the one place that
/// completes. libcurl's callbacks run on the engine's thread and only copy into `outbox`; `events` run off that
/// thread, one drain at a time, in order (one hop for a small answer's head, bytes and end together).
final class CurlTransfer: FMTransportTask, @unchecked Sendable {
    // @unchecked: `state` is behind `lock`; `easy`, `headers`, `body*`, `head*` and `prereqCount` belong to the
    // engine's thread once the transfer is added (before that, to `send`); the rest is immutable.
    let request: FMTransportRequest
    let events: FMTransportEvents
    /// What is handed on, in order: the head, the bytes, the end.
    private enum Outgoing {
        case head(Int, [(String, String)])
        case data(Data)
        case end(UncheckedCurlError)
    }
    /// Behind `lock`: what waits to be handed on, and whether a drain is scheduled or running.
    private var outbox: [Outgoing] = []
    private var draining = false

    private struct State {
        /// Bytes put in the outbox and not yet taken by `events.data`.
        var pending = 0
        /// The write callback paused the transfer (too much pending).
        var paused = false
        var resumeAsked = false
        /// `cancel()` was called, or SwiftFM refused the answer.
        var cancelled = false
        /// `events.complete` was scheduled.
        var ended = false
    }
    private let lock = NSLock()
    private var state = State()
    weak var engine: CurlEngine?

    var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutableRawPointer?
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: CurlOption.errorSize)
    /// The request body from memory, or the file's descriptor.
    private var bodyBytes: [UInt8] = []
    private var bodyOffset = 0
    private var bodyFD: Int32 = -1
    /// The body file's size and modification time when the transfer opened it, and the bytes read from it so far:
    /// the body is that file as it was then, or the transfer fails (``bodyFileProblem``).
    private var bodyFileLength: Int64 = 0
    private var bodyFileSnapshot: FileSnapshot?
    private var bodyFileRead: Int64 = 0
    /// Why the body file could not be sent as it was when the transfer started (it changed meanwhile): the
    /// transfer was aborted before its last byte went out, and fails with `-1009` naming the file.
    private(set) var bodyFileProblem: String?
    /// May this request be sent a second time (libcurl's retry on a dead reused connection)?
    let replayable: Bool
    /// `host:port` of the URL: the connection limit counts per origin.
    private(set) var origin = ""
    /// Its number in its origin's queue while it waits for a connection (the engine thread's own).
    var placeInLine: UInt64 = 0
    /// How often libcurl was about to send this request.
    private var prereqCount = 0
    /// The longest silence allowed, in seconds, and when a byte last went or came (engine's thread).
    private(set) var idleTimeout: TimeInterval = 60
    private(set) var lastActivity = DispatchTime.now().uptimeNanoseconds
    /// libcurl wanted to send it again and this transport refused.
    private(set) var refusedResend = false
    // The head being read.
    private var status = 0
    private var headLines: [(String, String)] = []
    /// Bytes of head read so far (interim heads and trailers included), and whether they passed ``maxHeadBytes``.
    private var headBytes = 0
    private(set) var headTooLarge = false
    /// The final head was handed on (what libcurl fails on after it is no longer the head's).
    private var headPosted = false

    /// The most bytes of head an answer may have: below libcurl's own limit (300 KB since 7.88; none before),
    /// far above any FileMaker answer's.
    static let maxHeadBytes = 256 * 1024

    /// Above this many bytes waiting for SwiftFM, the transfer pauses; it resumes once they are taken.
    static let highWater = 1 << 20

    init(request: FMTransportRequest, events: FMTransportEvents) {
        self.request = request
        self.events = events
        self.replayable = Self.isReplayable(request)
        errorBuffer.initialize(repeating: 0, count: CurlOption.errorSize)
    }

    deinit {
        if let headerList { fmcurl_slist_free_all(headerList) }
        if bodyFD >= 0 { close(bodyFD) }
        errorBuffer.deallocate()
    }

    /// The engine's rule (``Endpoint/cannotChangeData``) read off the request: a `GET` or `HEAD` that runs no
    /// script may be sent again; nothing else may.
    static func isReplayable(_ request: FMTransportRequest) -> Bool { request.mayBeSentAgain }

    // MARK: setup (on the caller's thread, before the engine sees it)

    /// Creates and configures the easy handle; an error when the request cannot be sent.
    func prepare(_ settings: CurlSettings) -> (any Error)? {
        let urlRequest = request.urlRequest
        guard let url = urlRequest.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "FMCurlTransport sends http and https URLs only"])
        }
        origin = engine?.origin(of: url) ?? url.connectionOrigin ?? ""
        guard let easy = engine?.takeHandle() else {
            return URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_easy_init failed"])
        }
        self.easy = easy
        let me = Unmanaged.passUnretained(self).toOpaque()
        var options = CurlEasyOptions(easy: easy)
        func long(_ option: Int32, _ value: Int) { options.long(option, value) }
        func string(_ option: Int32, _ value: String) { options.string(option, value) }
        func pointer(_ option: Int32, _ value: UnsafeRawPointer?) { options.pointer(option, value) }

        string(CurlOption.url, url.absoluteString)
        pointer(CurlOption.errorBuffer, UnsafeRawPointer(errorBuffer))
        pointer(CurlOption.privateData, UnsafeRawPointer(me))
        long(CurlOption.nosignal, 1)
        long(CurlOption.followLocation, 0)
        long(CurlOption.httpVersion, CurlOption.http11)
        long(CurlOption.sslVerifyPeer, 1)
        long(CurlOption.sslVerifyHost, 2)
        long(CurlOption.tcpKeepAlive, 1)
        long(CurlOption.suppressConnectHeaders, 1)
        long(CurlOption.connectTimeoutMS, Int(min(settings.idleTimeout * 1000, Double(Int32.max)).rounded(.up)))
        if let age = settings.maxConnectionAge { long(CurlOption.maxAgeConn, age) }
        // The silence between two bytes is bounded by the engine (``CurlEngine``), header bytes included: curl's
        // own low-speed check counts body bytes only, so a head arriving slowly would read as silence.
        idleTimeout = settings.idleTimeout
        // "": every coding this libcurl decodes; the bytes handed on are decoded. A request's own
        // Accept-Encoding header takes precedence over curl's.
        string(CurlOption.acceptEncoding, "")
        // TLS for this client only; verification stays on whatever is set.
        let tls = settings.tls
        if let ca = tls.caCertificates {
            string(CurlOption.caInfo, ca.path)
            pointer(CurlOption.caPath, nil) // the bundle alone: not the system's directory too
        }
        if !tls.pinnedPublicKeys.isEmpty { string(CurlOption.pinnedPublicKey, tls.pinnedPublicKeys.joined(separator: ";")) }
        if let certificate = tls.clientCertificate {
            string(CurlOption.sslCert, certificate.path)
            string(CurlOption.sslCertType, "PEM")
        }
        if let key = tls.clientKey {
            string(CurlOption.sslKey, key.path)
            string(CurlOption.sslKeyType, "PEM")
        }
        if let proxy = settings.proxy { string(CurlOption.proxy, proxy.absoluteString) }

        let write: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { bytes, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<CurlTransfer>.fromOpaque(me).takeUnretainedValue().received(bytes, size * count)
        }
        let header: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { bytes, size, count, me in
            guard let me else { return 0 }
            return Unmanaged<CurlTransfer>.fromOpaque(me).takeUnretainedValue().headerLine(bytes, size * count)
        }
        let prereq: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32) -> Int32 = { me, _, _, _, _ in
            guard let me else { return 1 }
            return Unmanaged<CurlTransfer>.fromOpaque(me).takeUnretainedValue().aboutToSend()
        }
        pointer(CurlOption.writeFunction, unsafeBitCast(write, to: UnsafeRawPointer.self))
        pointer(CurlOption.writeData, UnsafeRawPointer(me))
        pointer(CurlOption.headerFunction, unsafeBitCast(header, to: UnsafeRawPointer.self))
        pointer(CurlOption.headerData, UnsafeRawPointer(me))
        pointer(CurlOption.prereqFunction, unsafeBitCast(prereq, to: UnsafeRawPointer.self))
        pointer(CurlOption.prereqData, UnsafeRawPointer(me))

        if let error = setMethodBodyAndHeaders(&options, me: me) { return error }
        if options.failed {
            return URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "this libcurl refused an option SwiftFM needs (at least 7.80 is required)"])
        }
        return nil
    }

    /// Sets the method, the body (bytes or a file, read by libcurl's callbacks) and the headers; an error when
    /// the body file cannot be read or a header cannot be sent.
    private func setMethodBodyAndHeaders(_ options: inout CurlEasyOptions, me: UnsafeMutableRawPointer) -> (any Error)? {
        let urlRequest = request.urlRequest
        func long(_ option: Int32, _ value: Int) { options.long(option, value) }
        func string(_ option: Int32, _ value: String) { options.string(option, value) }
        func pointer(_ option: Int32, _ value: UnsafeRawPointer?) { options.pointer(option, value) }
        let method = (urlRequest.httpMethod ?? "GET").uppercased()
        var bodyLength: Int64 = 0
        if let file = request.bodyFile {
            // Opened as every upload's file is (UploadSource.openRegular): non-blocking, since a FIFO (the caller's file
            // swapped for one since the engine checked it, or a body file handed to the transport directly) would
            // otherwise wait here for a writer, for ever; and a regular file only, since only one has the size it says (a
            // device or a FIFO says 0 and would go out as an empty body): anything else is refused before a byte is sent,
            // as UploadSource refuses it (-1009 naming the file). The errors are this transport's own.
            let info: stat
            switch UploadSource.openRegular(file.path) {
            case .success(let opened):
                bodyFD = opened.descriptor
                info = opened.info
            case .failure(.cannotOpen(let reason)):
                return URLError(.fileDoesNotExist, userInfo: [NSLocalizedDescriptionKey: "cannot open the body file: \(reason)"])
            case .failure(.cannotStat):
                return URLError(.cannotOpenFile, userInfo: [NSLocalizedDescriptionKey: "cannot read the body file's size"])
            case .failure(.notRegular):
                return FMError.fileError("Cannot upload \(file.path): it is not a regular file")
            }
            bodyLength = Int64(info.st_size)
            bodyFileLength = bodyLength
            bodyFileSnapshot = FileSnapshot(info)
        } else if let data = urlRequest.httpBody, !data.isEmpty {
            bodyBytes = [UInt8](data)
            bodyLength = Int64(bodyBytes.count)
        }
        var headers = urlRequest.allHTTPHeaderFields ?? [:]
        if method == "GET" && bodyLength == 0 {
            long(CurlOption.httpGet, 1)
        } else if method == "HEAD" && bodyLength == 0 {
            long(CurlOption.nobody, 1)
        } else {
            long(CurlOption.post, 1)
            if method != "POST" { string(CurlOption.customRequest, method) }
            if fmcurl_easy_setopt_off(options.easy, CurlOption.postFieldSizeLarge, bodyLength) != 0 { options.failed = true }
            if bodyLength == 0 {
                string(CurlOption.copyPostFields, "")
            } else {
                let read: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = { buffer, size, count, me in
                    guard let me else { return CurlOption.readAbort }
                    return Unmanaged<CurlTransfer>.fromOpaque(me).takeUnretainedValue().readBody(buffer, size * count)
                }
                let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int32 = { me, offset, origin in
                    guard let me else { return 1 }
                    return Unmanaged<CurlTransfer>.fromOpaque(me).takeUnretainedValue().seekBody(offset, origin)
                }
                pointer(CurlOption.readFunction, unsafeBitCast(read, to: UnsafeRawPointer.self))
                pointer(CurlOption.readData, UnsafeRawPointer(me))
                pointer(CurlOption.seekFunction, unsafeBitCast(seek, to: UnsafeRawPointer.self))
                pointer(CurlOption.seekData, UnsafeRawPointer(me))
            }
            // curl would add `Content-Type: application/x-www-form-urlencoded` to a POST without one.
            if HTTPHeader.value("Content-Type", in: headers) == nil { headers["Content-Type"] = "" }
        }
        // Never `Expect: 100-continue` (a write waits for no interim answer): the caller's Expect is dropped and
        // curl's removed.
        var fields: [(name: String, value: String)] = [("Expect", "")]
        fields.reserveCapacity(headers.count + 1)
        for (name, value) in headers where !HTTPHeader.sameName(name, "Expect") { fields.append((name, value)) }
        fields.sort { $0.name < $1.name }
        var list: UnsafeMutableRawPointer?
        for (name, value) in fields {
            // "Name:" removes a header curl would add; "Name;" sends it empty.
            guard !HTTPHeader.cannotBeSent(name: name, value: value) else { return HTTPHeader.cannotBeSentError() }
            let line = value.isEmpty ? "\(name):" : "\(name): \(value)"
            guard let appended = fmcurl_slist_append(list, line) else {
                options.failed = true
                break
            }
            list = appended
        }
        headerList = list
        pointer(CurlOption.httpHeader, UnsafeRawPointer(list))
        return nil
    }

    // MARK: libcurl's callbacks (on the engine's thread)

    /// libcurl is about to send the request on a connection; a second time only for a request that may be
    /// sent twice.
    private func aboutToSend() -> Int32 {
        lastActivity = DispatchTime.now().uptimeNanoseconds
        prereqCount += 1
        if prereqCount > 1 && !replayable {
            refusedResend = true
            return 1 // CURL_PREREQFUNC_ABORT
        }
        return 0
    }

    private func headerLine(_ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let bytes else { return 0 }
        lastActivity = DispatchTime.now().uptimeNanoseconds
        headBytes += count
        if headBytes > Self.maxHeadBytes {
            headTooLarge = true
            return 0 // curl ends the transfer (CURLE_WRITE_ERROR); error(forResult:) says why
        }
        // Read as bytes (no Foundation string work per line): the line without its CR LF.
        let line = Self.trimmed(UnsafeRawBufferPointer(start: bytes, count: count), cutting: Self.isLineEnd)
        if Self.isStatusLine(line) {
            // A status line: a new head (after a 1xx, the final one).
            status = Self.statusCode(line)
            headLines = []
        } else if line.isEmpty {
            // Interim: the final head follows. Not 101 (Switching Protocols, never asked for): it is the answer, and
            // the bytes after it its body (they were handed on with no head at all).
            if (100..<200).contains(status) && status != 101 { return count }
            if status == 204 || status == 304, let easy {
                // No body may follow: bytes that came with it are dropped by libcurl, and the connection is not
                // used again (what follows on it could be read as the next request's answer).
                _ = fmcurl_easy_setopt_long(easy, CurlOption.forbidReuse, 1)
            }
            let head = (status, headLines)
            headLines = []
            headPosted = true
            post(.head(head.0, head.1), turn: engine)
        } else if Self.isBlank(line[line.startIndex]), !headLines.isEmpty {
            headLines[headLines.count - 1].1 += " " + Self.string(Self.trimmed(line, cutting: Self.isBlank))
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = Self.string(Self.trimmed(line[line.startIndex..<colon], cutting: Self.isBlank))
            let value = Self.string(Self.trimmed(line[(colon + 1)...], cutting: Self.isBlank))
            headLines.append((name, value))
        }
        return count
    }

    // Reading a head line's bytes.
    private static func isLineEnd(_ byte: UInt8) -> Bool { byte == 13 || byte == 10 }
    private static func isBlank(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 }

    /// `bytes` without the leading and trailing bytes `cut` says yes to.
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>, cutting cut: (UInt8) -> Bool) -> Slice<UnsafeRawBufferPointer> {
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, cut(bytes[start]) { start += 1 }
        while end > start, cut(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer, cutting cut: (UInt8) -> Bool) -> Slice<UnsafeRawBufferPointer> {
        trimmed(bytes[...], cutting: cut)
    }

    private static func string(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes), as: UTF8.self)
    }

    /// Starts with `HTTP/`.
    private static func isStatusLine(_ line: Slice<UnsafeRawBufferPointer>) -> Bool {
        guard line.count >= 5 else { return false }
        let i = line.startIndex
        return line[i] == 72 && line[i + 1] == 84 && line[i + 2] == 84 && line[i + 3] == 80 && line[i + 4] == 47
    }

    /// The status code of a status line (`HTTP/1.1 200 OK`: 200), 0 when there is none.
    private static func statusCode(_ line: Slice<UnsafeRawBufferPointer>) -> Int {
        guard let space = line.firstIndex(of: 32) else { return 0 }
        var code = 0, digits = 0
        var i = space + 1
        while i < line.endIndex, line[i] != 32 {
            let byte = line[i]
            guard byte >= 48, byte <= 57, digits < 9 else { return 0 }
            code = code * 10 + Int(byte - 48)
            digits += 1
            i += 1
        }
        return digits == 0 ? 0 : code
    }

    private func received(_ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let bytes else { return 0 }
        lastActivity = DispatchTime.now().uptimeNanoseconds
        let pause = lock.withLock { () -> Bool? in
            if state.cancelled || state.ended { return nil }
            if state.pending >= Self.highWater {
                state.paused = true
                return true
            }
            state.pending += count
            return false
        }
        guard let pause else { return 0 } // refused or cancelled: curl ends the transfer
        if pause { return CurlOption.writePause } // this chunk comes again once resumed
        let data = Data(bytes: bytes, count: count)
        post(.data(data), turn: engine)
        return count
    }

    private func readBody(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer else { return CurlOption.readAbort }
        lastActivity = DispatchTime.now().uptimeNanoseconds
        if bodyFD >= 0 {
            // Never past the length announced (a file that grew meanwhile would send more than Content-Length).
            let want = Int(min(Int64(count), bodyFileLength - bodyFileRead))
            guard want > 0 else { return 0 }
            let n = Glibc.read(bodyFD, buffer, want)
            guard n >= 0 else {
                bodyFileProblem = "Cannot read \(request.bodyFile?.path ?? "the body file") while it was uploaded: \(String(cString: strerror(errno)))"
                return CurlOption.readAbort
            }
            bodyFileRead += Int64(n)
            // The last byte goes out only if the file is still what it was: the server never gets a whole body made of
            // two versions of the file (or a short one, whose missing bytes it would wait for).
            if n == 0 || bodyFileRead == bodyFileLength, let problem = bodyFileChange(endedEarly: n == 0) {
                bodyFileProblem = problem
                return CurlOption.readAbort
            }
            return n
        }
        let n = min(count, bodyBytes.count - bodyOffset)
        guard n > 0 else { return 0 }
        bodyBytes.withUnsafeBytes { source in
            UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + bodyOffset, byteCount: n)
        }
        bodyOffset += n
        return n
    }

    /// libcurl rewinds the body to send it again: refused for a request that may change data.
    private func seekBody(_ offset: Int64, _ origin: Int32) -> Int32 {
        guard replayable, origin == SEEK_SET else {
            refusedResend = true
            return 1 // CURL_SEEKFUNC_FAIL
        }
        if bodyFD >= 0 {
            guard offset >= 0, offset <= bodyFileLength, lseek(bodyFD, off_t(offset), SEEK_SET) >= 0 else { return 1 }
            bodyFileRead = offset
            return 0
        }
        guard offset >= 0, offset <= Int64(bodyBytes.count) else { return 1 }
        bodyOffset = Int(offset)
        return 0
    }

    /// How the body file changed since the transfer opened it (its size, or its modification time), or `nil`.
    /// `endedEarly`: a read found the end before the length announced, a change whatever the file says.
    private func bodyFileChange(endedEarly: Bool) -> String? {
        let path = request.bodyFile?.path ?? "the body file"
        var info = stat()
        guard fstat(bodyFD, &info) == 0 else { return "Cannot read \(path) while it was uploaded: \(String(cString: strerror(errno)))" }
        if let change = bodyFileSnapshot?.change(to: FileSnapshot(info), path: path) { return change }
        if endedEarly {
            return "\(path) changed while it was uploaded (it ended after \(bodyFileRead) of \(bodyFileLength) bytes): "
                + "the upload was stopped; upload it again once it is complete"
        }
        return nil
    }

    /// The error of a transfer that stopped because its body file changed (``bodyFileProblem``): `-1009` naming the file.
    func bodyFileError(forResult result: Int32) -> FMError? {
        guard result != 0, let bodyFileProblem else { return nil }
        return .fileError(bodyFileProblem)
    }

    // MARK: handing on (off the engine's thread)

    /// Puts `item` in the outbox; schedules a drain unless one is scheduled or running: on the engine's thread
    /// (`turn` is the engine) once its turn ends, elsewhere at once.
    private func post(_ item: Outgoing, turn: CurlEngine? = nil) {
        let schedule = lock.withLock { () -> Bool in
            outbox.append(item)
            if draining { return false }
            draining = true
            return true
        }
        guard schedule else { return }
        if let turn { turn.drainLater(self) } else { DispatchQueue.global().async { [self] in drain() } }
    }

    /// Hands on everything in the outbox, in order, until it is empty.
    fileprivate func drain() {
        while true {
            let batch = lock.withLock { () -> [Outgoing] in
                let taken = outbox
                outbox = []
                if taken.isEmpty { draining = false }
                return taken
            }
            if batch.isEmpty { return }
            for item in batch {
                switch item {
                case .head(let status, let lines): deliverHead(status: status, lines: lines)
                case .data(let data): deliver(data)
                case .end(let outcome): events.complete(outcome.base)
                }
            }
        }
    }

    private func deliverHead(status: Int, lines: [(String, String)]) {
        guard !isCancelled else { return }
        let fields = Self.fields(of: lines)
        let accepted: Bool
        if let head = events.head {
            accepted = head(status, fields)
        } else {
            guard let url = request.urlRequest.url,
                  let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: fields) else { return }
            accepted = events.response(response)
        }
        if !accepted { refuse() }
    }

    /// The head's fields by name: a repeated field (its name the same with ASCII letters folded, as
    /// ``HTTPHeader/value(_:in:)`` looks names up) joins the first one's value, under the first one's name.
    static func fields(of lines: [(String, String)]) -> [String: String] {
        // Sized once: a dictionary that grows is re-hashed at each step.
        var fields = [String: String](minimumCapacity: lines.count)
        var names = [String: String](minimumCapacity: lines.count)
        for (name, value) in lines {
            let key = HTTPHeader.folded(name)
            if let first = names[key] {
                // In place: a head of many repeats is not copied once per repeat.
                fields[first]?.append(", ")
                fields[first]?.append(value)
            } else {
                names[key] = name
                fields[name] = value
            }
        }
        return fields
    }

    private func deliver(_ data: Data) {
        let live = !isCancelled
        let accepted = live && events.data(data)
        let resume = lock.withLock { () -> Bool in
            state.pending -= data.count
            guard state.paused, !state.resumeAsked, state.pending == 0 else { return false }
            state.resumeAsked = true
            return true
        }
        if live && !accepted { refuse() }
        if resume { engine?.resume(self) }
    }

    private var isCancelled: Bool { lock.withLock { state.cancelled } }

    /// Whether no byte went or came for longer than the idle timeout at `now` (a transfer paused because SwiftFM
    /// has not taken its bytes yet is not silent).
    func isSilent(at now: UInt64) -> Bool {
        let limit = idleTimeout * 1e9
        guard Double(now &- min(now, lastActivity)) > limit else { return false }
        if lock.withLock({ state.paused }) {
            lastActivity = now
            return false
        }
        return true
    }

    /// The engine added the transfer: its silence counts from now.
    func started() { lastActivity = DispatchTime.now().uptimeNanoseconds }

    /// The engine resumed the paused transfer.
    func resumed() {
        lock.withLock {
            state.paused = false
            state.resumeAsked = false
        }
    }

    /// SwiftFM refused the answer: hand on nothing more and end the transfer.
    private func refuse() { cancel() }

    func cancel() {
        let first = lock.withLock { () -> Bool in
            guard !state.cancelled, !state.ended else { return false }
            state.cancelled = true
            return true
        }
        guard first else { return }
        if let engine { engine.cancel(self) } else { finish(URLError(.cancelled)) }
    }

    /// Completes the exchange (once), after everything handed on before; `turn`: called on the engine's thread.
    func finish(_ error: Error?, turn: CurlEngine? = nil) {
        let outcome = lock.withLock { () -> UncheckedCurlError? in
            guard !state.ended else { return nil }
            state.ended = true
            return UncheckedCurlError(base: state.cancelled && error != nil ? URLError(.cancelled) : error)
        }
        guard let outcome else { return }
        post(.end(outcome), turn: turn)
    }

    /// Fails before libcurl saw the request.
    func fail(_ error: any Error) {
        finish(error)
    }

    /// The engine removed the easy handle (or the request could not be prepared): hands it back for the next
    /// transfer and frees the rest.
    func release() {
        if let easy {
            if let engine { engine.recycle(easy) } else { fmcurl_easy_cleanup(easy) }
        }
        easy = nil
        if let headerList { fmcurl_slist_free_all(headerList) }
        headerList = nil
        if bodyFD >= 0 { close(bodyFD) }
        bodyFD = -1
        bodyBytes = []
    }

    /// What to do about a TLS failure, for the result codes that have a fix in this client's configuration (60 and 51:
    /// an authority this machine does not trust; 90: no pin matches; 77, 58: the bundle or the client certificate cannot
    /// be read; 56: a handshake refused, as for a missing client certificate); `nil` for the others.
    static func advice(forResult result: Int32, detail: String, host: String) -> String? {
        switch result {
        case 60, 51:
            return "the certificate of \(host) does not verify: trust its CA with FMConfiguration.tls.caCertificates "
                + "(a PEM bundle, for this client only), or \(FMError.trustRemedyClause)"
        case 90:
            return "the public key of \(host) matches none of FMConfiguration.tls.pinnedPublicKeys: check the pins, "
                + "and pin the new key when its certificate was renewed with one"
        case 77:
            return "FMConfiguration.tls.caCertificates cannot be read as a PEM bundle"
        case 58:
            return "FMConfiguration.tls.clientCertificate or clientKey cannot be used (PEM, unencrypted key)"
        case 56 where refusedHandshake(detail):
            return "\(host) refused the TLS handshake: does it require a client certificate (FMConfiguration.tls.clientCertificate)?"
        default:
            return nil
        }
    }

    /// Whether libcurl's words for a RECV_ERROR (56) tell a TLS alert or a certificate: the server refused the handshake
    /// (TLS 1.3 sends "certificate required" on the first read), not a connection that was merely lost.
    static func refusedHandshake(_ detail: String) -> Bool {
        let words = detail.lowercased()
        return words.contains("certificate") || words.contains("alert")
    }

    /// libcurl's result, as the `URLError` SwiftFM maps (``FMError/fromTransport(_:url:)``).
    func error(forResult result: Int32) -> URLError? {
        guard result != 0 else { return nil }
        let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : fmcurl_easy_strerror(result).map { String(cString: $0) } ?? ""
        var message = "curl \(result): \(detail)"
        let host = request.urlRequest.url?.host ?? "the server"
        if let advice = Self.advice(forResult: result, detail: detail, host: host) { message += " — " + advice }
        if headTooLarge {
            // A malformed answer, not a lost connection: it is not ridden out as a server that is away.
            return URLError(.cannotParseResponse, userInfo: [NSLocalizedDescriptionKey:
                "the answer's head is larger than \(Self.maxHeadBytes / 1024) KB"])
        }
        if result == 27 || result == 100, headBytes > 0, !headPosted {
            // OUT_OF_MEMORY (TOO_LARGE since libcurl 8.6) while the head is read: a header line longer than libcurl
            // takes (100 KB). A malformed answer too, not a lost connection.
            return URLError(.cannotParseResponse, userInfo: [NSLocalizedDescriptionKey:
                "a line of the answer's head is longer than libcurl takes (\(message))"])
        }
        if refusedResend {
            return URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey:
                "the connection closed before any answer; the request was not sent again, as it may change data (\(message))"])
        }
        return URLError(Self.urlCode(forResult: result, detail: detail), userInfo: [NSLocalizedDescriptionKey: message])
    }

    /// The `URLError` code of libcurl's `result` (`detail`: libcurl's words for it), as ``FMError/fromTransport(_:url:answerStarted:)``
    /// reads it: a lost connection, a malformed answer, a TLS failure, a timeout, a cancel.
    static func urlCode(forResult result: Int32, detail: String) -> URLError.Code {
        switch result {
        // UNSUPPORTED_PROTOCOL: also libcurl's word for an answer it cannot read (HTTP/0.9, "Unsupported HTTP version in
        // response", "Unsupported response code in HTTP response"): a malformed answer, not a URL to fix.
        case 1: return detail.contains("HTTP/0.9") || detail.contains("response") ? .cannotParseResponse : .unsupportedURL
        case 3: return .badURL // URL_MALFORMAT
        case 5, 6: return .cannotFindHost // COULDNT_RESOLVE_PROXY, COULDNT_RESOLVE_HOST
        case 7: return .cannotConnectToHost // COULDNT_CONNECT
        case 8: return .cannotParseResponse // WEIRD_SERVER_REPLY
        case 18: return .networkConnectionLost // PARTIAL_FILE
        case 23, 42: return .cancelled // WRITE_ERROR (refused), ABORTED_BY_CALLBACK
        case 26: return .cannotOpenFile // READ_ERROR (the body file)
        case 28: return .timedOut // OPERATION_TIMEDOUT
        case 35: return .secureConnectionFailed // SSL_CONNECT_ERROR
        // RECV_ERROR is also a chunked body libcurl cannot parse: a malformed answer, never ridden out as a server away.
        case 56 where detail.lowercased().contains("chunk"): return .cannotParseResponse
        // A handshake the server refused (a client certificate it wants): a TLS failure, fails the same way again.
        case 56 where refusedHandshake(detail): return .secureConnectionFailed
        case 52, 55, 56: return .networkConnectionLost // GOT_NOTHING, SEND_ERROR, RECV_ERROR
        case 58, 59: return .clientCertificateRejected // SSL_CERTPROBLEM, SSL_CIPHER
        case 60, 51, 90: return .serverCertificateUntrusted // PEER_FAILED_VERIFICATION, SSL_PINNEDPUBKEYNOTMATCH
        case 61: return .cannotDecodeContentData // BAD_CONTENT_ENCODING
        case 65: return .networkConnectionLost // SEND_FAIL_REWIND
        case 77, 80, 83: return .secureConnectionFailed // SSL_CACERT_BADFILE, SSL_SHUTDOWN_FAILED, SSL_ISSUER_ERROR
        default: return .unknown
        }
    }
}

/// Carries a transport error (or none) across a queue hop.
private struct UncheckedCurlError: @unchecked Sendable {
    let base: Error?
}

// MARK: - The multi handle and its thread

/// One curl multi handle, driven by a thread of its own: it adds, cancels and resumes transfers as commands
/// arrive (`curl_multi_wakeup`), runs libcurl, and removes each transfer that ended. The thread ends once the
/// transport is released and its last transfer ended.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `commands`, `closing` and `exited` are behind `lock`; `multi` and `active` belong to the thread.
    private enum Command {
        case add(CurlTransfer)
        case cancel(CurlTransfer)
        case resume(CurlTransfer)
    }
    private let multi: UnsafeMutableRawPointer
    private let lock = NSLock()
    private var commands: [Command] = []
    private var closing = false
    /// The thread decided to end: the multi handle is cleaned up (or about to be) and must not be woken.
    private var exited = false
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles of ended transfers, reset, for the next ones (behind `lock`): a handle is made once, not per
    /// request. At most ``maxSpareHandles``.
    private var spareHandles: [UnsafeMutableRawPointer] = []
    private let maxSpareHandles: Int
    /// Transfers waiting for a connection to their origin, in order (their idle time does not count yet), and how
    /// many run per origin (the thread's own).
    private var waiting: [String: WaitQueue<CurlTransfer>] = [:]
    /// The last number given to a transfer that waits, for all origins: an origin's queue is dropped when it
    /// empties, and a new one would number from 1 again, so a late cancel of a transfer that waited once (and
    /// has ended since) would find, under its old number, another transfer waiting now.
    private var lastPlace: UInt64 = 0
    private var running: [String: Int] = [:]
    private let maxConnectionsPerHost: Int
    /// Transfers whose outbox got something during this turn of the loop (the thread's own): their drains are
    /// scheduled once the turn ends, so that a small answer's head, bytes and end take one hop, not three.
    private var drainsDue: [CurlTransfer] = []
    /// Signalled when the thread ended and the multi handle was cleaned up.
    private let finished = DispatchSemaphore(value: 0)

    /// The engine's threads running now, in the process (tests: a released transport's thread ends).
    static let threads = Locked(0)

    init?(maxConnectionsPerHost: Int) {
        guard let multi = fmcurl_multi_init() else { return nil }
        self.multi = multi
        maxSpareHandles = min(maxConnectionsPerHost, 64)
        self.maxConnectionsPerHost = maxConnectionsPerHost
        // The limit per host is the engine's (`waiting`), not curl's: a transfer curl holds back for a connection
        // would look silent to the idle timer, and curl counts per proxy when there is one.
        _ = fmcurl_multi_setopt_long(multi, CurlOption.multiMaxConnects, maxConnectionsPerHost)
        Self.threads.withLock { $0 += 1 }
        let thread = Thread { [self] in run() }
        thread.name = "SwiftFM.FMCurlTransport"
        thread.start()
    }

    func add(_ transfer: CurlTransfer) {
        transfer.engine = self
        post(.add(transfer))
    }

    /// The origin (`URL.connectionOrigin`) of the last URL whose text has a `scheme://authority/`:
    /// a client's requests go to one host, so most find their origin by comparing bytes.
    private let lastOrigin = Locked<OriginPrefix?>(nil)

    /// `host:port` of `url`, the key of the per-host connection limit.
    func origin(of url: URL) -> String {
        let text = url.absoluteString
        if let known = lastOrigin.withLock({ $0?.origin(ofText: text) }) { return known }
        guard let prefix = OriginPrefix(url) else { return url.connectionOrigin ?? "" }
        lastOrigin.withLock { $0 = prefix }
        return prefix.origin
    }

    /// An easy handle for a new transfer: a spare one, or a new one (`nil` when libcurl cannot make one).
    func takeHandle() -> UnsafeMutableRawPointer? {
        if let spare = lock.withLock({ spareHandles.popLast() }) { return spare }
        return fmcurl_easy_init()
    }

    /// A handle no transfer uses any more (not in the multi handle): reset and kept for the next, or freed.
    func recycle(_ easy: UnsafeMutableRawPointer) {
        // Every option back to its default: nothing of the last request (its headers, body callbacks, a refusal
        // to reuse its connection) carries over.
        fmcurl_easy_reset(easy)
        let kept = lock.withLock { () -> Bool in
            guard !exited, spareHandles.count < maxSpareHandles else { return false }
            spareHandles.append(easy)
            return true
        }
        if !kept { fmcurl_easy_cleanup(easy) }
    }

    /// Called on the thread while it runs libcurl: `transfer`'s drain is scheduled when this turn ends.
    func drainLater(_ transfer: CurlTransfer) { drainsDue.append(transfer) }

    private func scheduleDrains() {
        guard !drainsDue.isEmpty else { return }
        for transfer in drainsDue { DispatchQueue.global().async { transfer.drain() } }
        drainsDue.removeAll(keepingCapacity: true)
    }

    func cancel(_ transfer: CurlTransfer) { post(.cancel(transfer)) }
    func resume(_ transfer: CurlTransfer) { post(.resume(transfer)) }

    /// The transport was released: the thread ends once no transfer is left.
    func close() {
        // The wake-up under the lock: the thread may otherwise see `closing`, end and clean the multi handle up
        // between the two (a use after free).
        lock.withLock {
            closing = true
            if !exited { _ = fmcurl_multi_wakeup(multi) }
        }
    }

    private func post(_ command: Command) {
        // After the thread ended (a late resume from a drain, a cancel of what ended) there is nothing to do.
        lock.withLock {
            guard !exited else { return }
            commands.append(command)
            _ = fmcurl_multi_wakeup(multi)
        }
    }

    private func run() {
        while true {
            let (taken, done) = lock.withLock { () -> ([Command], Bool) in
                defer { commands = [] }
                let done = closing && commands.isEmpty && active.isEmpty && waiting.isEmpty
                if done { exited = true }
                return (commands, done)
            }
            if done { break }
            for command in taken { apply(command) }
            var running: Int32 = 0
            _ = fmcurl_multi_perform(multi, &running)
            var easy: UnsafeMutableRawPointer?
            var result: Int32 = 0
            while fmcurl_multi_next_done(multi, &easy, &result) == 1 {
                guard let handle = easy, let transfer = active.removeValue(forKey: handle) else { continue }
                _ = fmcurl_multi_remove_handle(multi, handle)
                let error: Error? = transfer.bodyFileError(forResult: result) ?? transfer.error(forResult: result)
                transfer.release()
                transfer.finish(error, turn: self)
                ended(transfer)
            }
            endSilentTransfers()
            scheduleDrains()
            let more = lock.withLock { !commands.isEmpty }
            if !more { _ = fmcurl_multi_poll(multi, active.isEmpty ? 1000 : 250) }
        }
        for easy in lock.withLock({ () -> [UnsafeMutableRawPointer] in
            defer { spareHandles = [] }
            return spareHandles
        }) { fmcurl_easy_cleanup(easy) }
        _ = fmcurl_multi_cleanup(multi)
        Self.threads.withLock { $0 -= 1 }
        finished.signal()
    }

    /// Waits (at most `timeout` seconds) for the thread to end; whether it did (tests).
    func waitUntilFinished(timeout: TimeInterval) -> Bool {
        finished.wait(timeout: .now() + timeout) == .success
    }

    /// Ends each transfer silent for longer than its idle timeout with `URLError(.timedOut)`.
    private func endSilentTransfers() {
        guard !active.isEmpty else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        for (easy, transfer) in active where transfer.isSilent(at: now) {
            active.removeValue(forKey: easy)
            _ = fmcurl_multi_remove_handle(multi, easy)
            let seconds = transfer.idleTimeout
            transfer.release()
            transfer.finish(URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: "no byte went or came for \(seconds) s"]), turn: self)
            ended(transfer)
        }
    }

    private func apply(_ command: Command) {
        switch command {
        case .add(let transfer):
            guard transfer.easy != nil else { return }
            if running[transfer.origin, default: 0] < maxConnectionsPerHost {
                start(transfer)
            } else {
                var queue = waiting.removeValue(forKey: transfer.origin) ?? WaitQueue()
                lastPlace += 1
                transfer.placeInLine = lastPlace
                queue.append(transfer.placeInLine, transfer)
                waiting[transfer.origin] = queue
            }
        case .cancel(let transfer):
            if let easy = transfer.easy, active.removeValue(forKey: easy) != nil {
                _ = fmcurl_multi_remove_handle(multi, easy)
                transfer.release()
                transfer.finish(URLError(.cancelled))
                ended(transfer)
            } else if var queue = waiting[transfer.origin], queue.contains(transfer.placeInLine) {
                // Taken out only when the transfer waits in it: a queue taken out for a transfer that does not
                // (a cancel that arrived after its end) was lost, with every request waiting in it.
                waiting[transfer.origin] = nil   // the one reference: removed in place
                queue.remove(transfer.placeInLine)
                transfer.placeInLine = 0
                if !queue.isEmpty { waiting[transfer.origin] = queue }
                transfer.release()
                transfer.finish(URLError(.cancelled))
            } else {
                // Not added (it failed to start) or ended already: its end is decided elsewhere.
                transfer.finish(URLError(.cancelled))
            }
        case .resume(let transfer):
            guard let easy = transfer.easy, active[easy] != nil else { return }
            transfer.resumed()
            // May call the write callback at once with what curl held back.
            _ = fmcurl_easy_pause(easy, CurlOption.pauseContinue)
        }
    }

    /// Hands `transfer` to libcurl: its idle time counts from now.
    private func start(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy else { return }
        if fmcurl_multi_add_handle(multi, easy) != 0 {
            transfer.release()
            transfer.finish(URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "curl_multi_add_handle failed"]))
            return
        }
        running[transfer.origin, default: 0] += 1
        transfer.started()
        active[easy] = transfer
    }

    /// `transfer` left libcurl: the next one waiting for its origin starts.
    private func ended(_ transfer: CurlTransfer) {
        let origin = transfer.origin
        let left = running[origin, default: 1] - 1
        running[origin] = left > 0 ? left : nil
        guard var queue = waiting.removeValue(forKey: origin) else { return }
        while running[origin, default: 0] < maxConnectionsPerHost, let next = queue.popFirst() {
            next.placeInLine = 0   // no longer waiting (numbers start at 1)
            start(next)
        }
        if !queue.isEmpty { waiting[origin] = queue }
    }
}

/// Sets libcurl options on one easy handle and remembers whether libcurl refused any.
struct CurlEasyOptions {
    let easy: UnsafeMutableRawPointer
    /// `true` once libcurl refused an option.
    var failed = false

    mutating func long(_ option: Int32, _ value: Int) {
        if fmcurl_easy_setopt_long(easy, option, value) != 0 { failed = true }
    }

    mutating func string(_ option: Int32, _ value: String) {
        if value.withCString({ fmcurl_easy_setopt_ptr(easy, option, $0) }) != 0 { failed = true }
    }

    mutating func pointer(_ option: Int32, _ value: UnsafeRawPointer?) {
        if fmcurl_easy_setopt_ptr(easy, option, value) != 0 { failed = true }
    }
}
#endif
