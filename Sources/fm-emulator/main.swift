#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import SwiftFMEmulator

// fm-emulator: serves the FileMaker Data API emulator on a local port until SIGINT or SIGTERM.

#if canImport(Glibc)
// A large answer (10,000 records are a few MB, in a few buffers) would otherwise be fresh mmap'd memory
// on every request, page-faulted in and unmapped again (a fifth of the time of such a request): keep
// blocks up to 32 MiB in the heap and give freed memory back only above 64 MiB. glibc's own
// MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ environment variables still win.
// (`mallopt` is not in Swift's Glibc module: looked up by name; M_TRIM_THRESHOLD -1, M_MMAP_THRESHOLD -3.)
if let symbol = dlsym(nil, "mallopt") {
    let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    let environment = ProcessInfo.processInfo.environment
    if environment["MALLOC_MMAP_THRESHOLD_"] == nil { _ = mallopt(-3, 32 << 20) }
    if environment["MALLOC_TRIM_THRESHOLD_"] == nil { _ = mallopt(-1, 64 << 20) }
}
#endif

let usage = """
    usage: fm-emulator [--host HOST] [--port N] [--schema FILE] [--tls-certificate FILE --tls-key FILE] [--control]
                       [--control-port N] [--claris-id] [--verbose] [--stop-on-stdin-close] [--help]
           fm-emulator capture --host URL --database NAME --username NAME … (see fm-emulator capture --help)

      --host HOST     address to listen on (default 127.0.0.1; localhost means 127.0.0.1)
      --port N        port to listen on (default 0: any free port, printed on start)
      --schema FILE   a schema file (format: Docs/SCHEMA.md in the SwiftFM repository);
                      default: the built-in demo solution
      --tls-certificate FILE  serve HTTPS (TLS 1.2 or later) instead of plain HTTP, with this PEM
                      certificate (or chain: the server's first, then intermediates); needs --tls-key.
                      Uses the system's OpenSSL 3 (libssl.so.3, Linux). Clients trust it through its CA:
                      curl --cacert ca.pem, Python requests verify="ca.pem", SwiftFM
                      FMTLSOptions(caCertificates:)
      --tls-key FILE  the certificate's PEM private key (not encrypted); needs --tls-certificate
      --control       also serve the control API (JSON over HTTP: faults, clock, tokens, reset,
                      request log, records; see the README) on another port of HOST
      --control-port N  the control API's port (0: any free port; implies --control)
      --public-url URL  the URL clients use behind a reverse proxy or TLS front (https://host:port):
                      container URLs and redirects use its scheme, host and port (without it,
                      X-Forwarded-Proto/X-Forwarded-Host, else the Host header over http)
      --max-connections N  client connections served at once (default 256); at the cap the
                      longest-idle one is closed to admit a new one, or 503 if all are busy
      --idle-timeout S  close a keep-alive connection idle for S seconds (default 60)
      --header-timeout S  close a connection whose request head takes over S seconds (default 10)
      --body-timeout S  close a connection whose request body stalls for S seconds (default 30)
      --log-bodies    keep request bodies in the request log (control API /v1/log)
      --max-logged-requests N  requests the request log keeps, oldest dropped first (default 10000)
      --max-logged-bytes N  bytes the request log keeps, oldest dropped first (default 33554432)
      --max-answer-bytes N  the most bytes of records one answer (a found set, an OData read or
                      $batch) may hold; past it HTTP 500, FileMaker code 953 (default 268435456)
      --claris-id     also play Amazon Cognito for Claris ID (FileMaker Cloud) sign-in: every
                      schema account is a Claris ID user in FileMaker Cloud's pool; FMID logins
                      (see Docs/SCHEMA.md, "Claris ID")
      --claris-id-token-lifetime S  seconds a Claris ID token stays valid (default 3600;
                      implies --claris-id)
      --verbose       log one line per request to stderr (every token redacted); read that stream
                      or send it to a file: lines that find a full, unread pipe are dropped (and
                      counted), never waited for
      --stop-on-stdin-close  stop (exit 0) when standard input reaches end of file: start it
                      with a pipe on stdin and it stops when the harness does, even one killed
                      with SIGKILL (the kernel closes the pipe then); bytes read are ignored
      --help          show this help

    Serves the Data API at /fmi/data/{v1,v2,vLatest} and FileMaker's OData v4 API at /fmi/odata/v4
    (Basic authentication per request) over the same records, in plain HTTP, or in HTTPS with
    --tls-certificate and --tls-key (the control API stays plain HTTP on its own port, as its line
    says). Behind a TLS front of your
    own (nginx) pass --public-url instead.

    Prints one line `listening on http://HOST:PORT` (`https://` with --tls-certificate) once ready
    (then, with --control, one line `control on http://HOST:PORT`); stops on SIGINT or SIGTERM
    (exit 0), and with --stop-on-stdin-close when standard input closes. Exit status 1: a schema it
    cannot load, an address it cannot bind, or a TLS certificate or key it cannot use (the reason on
    stderr, naming the file); 2: a bad argument.

    """

func writeStderr(_ text: String) {
    writeAll(STDERR_FILENO, text)
}

/// Unbuffered: each call is one write(2) to stdout, so a reading process sees the line at once.
func writeStdout(_ text: String) {
    writeAll(STDOUT_FILENO, text)
}

/// Writes `text` with POSIX write(2); a closed pipe ends the output quietly (SIGPIPE is ignored here,
/// and FileHandle.write would trap on EPIPE).
func writeAll(_ fd: Int32, _ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}

/// Writes `text` to stderr only if the write cannot block: a harness that never reads a stderr pipe (`--verbose`
/// lines fill it) must not keep the emulator from stopping. A pipe with room for PIPE_BUF bytes polls writable, and
/// a write of at most that many bytes is then whole.
func writeStderrIfRoom(_ text: String) {
    var descriptor = pollfd(fd: STDERR_FILENO, events: Int16(POLLOUT), revents: 0)
    guard poll(&descriptor, 1, 0) == 1, descriptor.revents & Int16(POLLOUT) != 0 else { return }
    writeAll(STDERR_FILENO, text)
}

struct Options {
    var host = "127.0.0.1"
    var port: UInt16 = 0
    var schema: String?
    var verbose = false
    var publicURL: URL?
    var controlPort: UInt16?
    var maxConnections: Int?
    var idleTimeout: Double?
    var headerTimeout: Double?
    var bodyTimeout: Double?
    var logBodies = false
    var maxLoggedRequests: Int?
    var maxLoggedBytes: Int?
    var maxAnswerBytes: Int?
    var clarisID = false
    var clarisIDTokenLifetime: Double?
    var stopOnStdinClose = false
    var tlsCertificate: String?
    var tlsKey: String?
}

/// The options that take a value.
let valueOptions: Set<String> = ["--host", "--port", "-p", "--control-port", "--schema", "--public-url", "--max-connections",
                                 "--idle-timeout", "--header-timeout", "--body-timeout", "--max-logged-requests",
                                 "--max-logged-bytes", "--max-answer-bytes", "--claris-id-token-lifetime",
                                 "--tls-certificate", "--tls-key"]

/// The options that take no value.
let flagOptions: Set<String> = ["--help", "-h", "--verbose", "-v", "--control", "--log-bodies", "--claris-id", "--stop-on-stdin-close"]

/// The option `argument` was most likely meant to be: the long option within two edits of it (case ignored), or the
/// only one it begins; `nil` when none or several are as close.
func suggestion(for argument: String) -> String? {
    let typed = Array(argument.lowercased())
    guard typed.count >= 3, typed.count <= 64 else { return nil }
    let options = valueOptions.union(flagOptions).filter { $0.hasPrefix("--") }.sorted()
    /// The edit distance (insertions, deletions, substitutions) of `typed` and `option`.
    func distance(_ option: String) -> Int {
        let target = Array(option)
        var previous = Array(0...target.count)
        for (i, a) in typed.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: target.count)
            for (j, b) in target.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (a == b ? 0 : 1))
            }
            previous = current
        }
        return previous[target.count]
    }
    let scored = options.map { (option: $0, distance: distance($0)) }
    if let best = scored.map(\.distance).min(), best <= 2 {
        let closest = scored.filter { $0.distance == best }
        return closest.count == 1 ? closest[0].option : nil
    }
    let extending = options.filter { $0.hasPrefix(String(typed)) }
    return extending.count == 1 ? extending[0] : nil
}

func parseArguments(_ arguments: [String]) -> Options? {
    var options = Options()
    var i = 0
    while i < arguments.count {
        var argument = arguments[i]
        var inlineValue: String?
        if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
            inlineValue = String(argument[argument.index(after: eq)...])
            argument = String(argument[..<eq])
        }
        if valueOptions.contains(argument) {
            if inlineValue == nil, i + 1 < arguments.count {
                i += 1
                inlineValue = arguments[i]
            }
            guard let value = inlineValue else {
                writeStderr("fm-emulator: \(argument) needs a value\n")
                return nil
            }
            guard apply(argument, value, to: &options) else { return nil }
            i += 1
            continue
        }
        switch argument {
        case "--help", "-h":
            writeStdout(usage)
            exit(0)
        case "--verbose", "-v":
            options.verbose = true
        case "--control":
            if options.controlPort == nil { options.controlPort = 0 }
        case "--log-bodies":
            options.logBodies = true
        case "--claris-id":
            options.clarisID = true
        case "--stop-on-stdin-close":
            options.stopOnStdinClose = true
        default:
            let hint = suggestion(for: argument).map { " (did you mean \($0)?)" } ?? ""
            writeStderr("fm-emulator: unknown argument \(arguments[i])\(hint)\n")
            return nil
        }
        i += 1
    }
    if (options.tlsCertificate == nil) != (options.tlsKey == nil) {
        writeStderr("fm-emulator: --tls-certificate and --tls-key go together (HTTPS needs both files)\n")
        return nil
    }
    return options
}

/// Sets option `name` (one of `valueOptions`) from `v`; `false` (after saying why on stderr) when `v` is not valid.
func apply(_ name: String, _ v: String, to options: inout Options) -> Bool {
    func invalid(_ what: String = "") -> Bool {
        writeStderr("fm-emulator: invalid \(name) \(v)\(what)\n")
        return false
    }
    /// A number of seconds above `minimum`, finite.
    func seconds(above minimum: Double = 0, orEqual: Bool = false) -> Double? {
        guard let s = Double(v), s.isFinite, orEqual ? s >= minimum : s > minimum else { return nil }
        return s
    }
    switch name {
    case "--host":
        guard !v.isEmpty else { return invalid() }
        options.host = v
    case "--port", "-p":
        guard let p = UInt16(v) else { return invalid() }
        options.port = p
    case "--control-port":
        guard let p = UInt16(v) else { return invalid() }
        options.controlPort = p
    case "--schema":
        guard !v.isEmpty else { return invalid() }
        options.schema = v
    case "--tls-certificate", "--tls-key":
        guard !v.isEmpty else { return invalid(" (a PEM file)") }
        if name == "--tls-key" { options.tlsKey = v } else { options.tlsCertificate = v }
    case "--public-url":
        guard let url = URL(string: v), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host?.isEmpty == false else {
            return invalid(" (--public-url needs an http or https URL with a host)")
        }
        options.publicURL = url
    case "--max-connections":
        guard let n = Int(v), n >= 1 else { return invalid() }
        options.maxConnections = n
    case "--idle-timeout", "--header-timeout", "--body-timeout":
        guard let s = seconds() else { return invalid() }
        switch name {
        case "--idle-timeout": options.idleTimeout = s
        case "--header-timeout": options.headerTimeout = s
        default: options.bodyTimeout = s
        }
    case "--max-logged-requests", "--max-logged-bytes":
        guard let n = Int(v), n >= 0 else { return invalid(" (a whole number, 0 or more)") }
        if name == "--max-logged-requests" { options.maxLoggedRequests = n } else { options.maxLoggedBytes = n }
    case "--max-answer-bytes":
        guard let n = Int(v), n >= 1 else { return invalid(" (a whole number, 1 or more)") }
        options.maxAnswerBytes = n
    default: // --claris-id-token-lifetime
        guard let s = seconds(above: 1, orEqual: true) else { return invalid() }
        options.clarisID = true
        options.clarisIDTokenLifetime = s
    }
    return true
}

signal(SIGPIPE, SIG_IGN)

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "capture" {
    runCaptureCommand(Array(CommandLine.arguments.dropFirst(2)))
}

guard let options = parseArguments(Array(CommandLine.arguments.dropFirst())) else {
    writeStderr(usage)
    exit(2)
}

let emulator: Emulator
if let schema = options.schema {
    do {
        emulator = try Emulator(schemaFile: URL(fileURLWithPath: schema))
    } catch {
        writeStderr("fm-emulator: cannot load schema \(schema): \(error)\n")
        exit(1)
    }
} else {
    emulator = Emulator()
}

emulator.publicURL = options.publicURL
if let certificate = options.tlsCertificate, let key = options.tlsKey {
    emulator.tls = EmulatorTLS(certificateFile: URL(fileURLWithPath: certificate), keyFile: URL(fileURLWithPath: key))
}
if let n = options.maxConnections { emulator.maxConnections = n }
if let s = options.idleTimeout { emulator.connectionIdleTimeout = s }
if let s = options.headerTimeout { emulator.connectionHeaderTimeout = s }
if let s = options.bodyTimeout { emulator.connectionBodyTimeout = s }
emulator.logsBodies = options.logBodies
if let n = options.maxLoggedRequests { emulator.maxLoggedRequests = n }
if let n = options.maxLoggedBytes { emulator.maxLoggedBytes = n }
if let n = options.maxAnswerBytes { emulator.maxAnswerBytes = n }
emulator.clarisID = options.clarisID
if let s = options.clarisIDTokenLifetime { emulator.clarisIDTokenLifetime = s }

/// The `--verbose` request lines, written to stderr by a thread of their own: a request hands its line over and
/// never waits for stderr, so a harness that pipes stderr and never reads it (`stderr=subprocess.PIPE`) does not
/// stall the emulator. Lines that find a full buffer (``limit`` bytes waiting) are dropped and counted; the count is
/// written after the lines that had room, once stderr takes them.
final class RequestLog: @unchecked Sendable {
    // @unchecked: every field is behind `condition`.
    private let condition = NSCondition()
    private var waiting: [String] = []
    private var waitingBytes = 0
    private var dropped = 0
    /// The thread is writing a batch it took.
    private var writing = false
    /// The bytes of lines held at most while stderr takes none.
    static let limit = 256 << 10

    init() {
        Thread.detachNewThread { [self] in run() }
    }

    func append(_ line: String) {
        let text = line.hasSuffix("\n") ? line : line + "\n"
        condition.withLock {
            guard waitingBytes + text.utf8.count <= Self.limit else {
                dropped += 1
                return
            }
            waiting.append(text)
            waitingBytes += text.utf8.count
            condition.signal()
        }
    }

    private func run() {
        while true {
            let (lines, lost) = condition.withLock { () -> ([String], Int) in
                writing = false
                condition.broadcast()
                while waiting.isEmpty && dropped == 0 { condition.wait() }
                writing = true
                defer { (waiting, waitingBytes, dropped) = ([], 0, 0) }
                return (waiting, dropped)
            }
            if !lines.isEmpty { writeStderr(lines.joined()) }
            if lost > 0 { writeStderr("fm-emulator: \(lost) request line(s) dropped: stderr was not read\n") }
        }
    }

    /// Before the process exits: waits until every line handed over is written, or `seconds` pass (stderr a full
    /// pipe nobody reads must not keep the emulator from stopping).
    func flush(seconds: TimeInterval = 10) {
        let until = Date(timeIntervalSinceNow: seconds)
        condition.withLock {
            while writing || !waiting.isEmpty || dropped > 0 {
                if !condition.wait(until: until) { return }
            }
        }
    }
}

let requestLog = options.verbose ? RequestLog() : nil
if let requestLog {
    emulator.onRequest = { line in requestLog.append(line) }
}

/// Stops the servers and exits 0, the request lines written first.
@Sendable func stopAndExit() -> Never {
    emulator.stopControl()
    emulator.stop()
    requestLog?.flush()
    exit(0)
}

// Handle SIGINT/SIGTERM instead of the default "die now". A signal source takes effect once libdispatch has
// registered it, asynchronously after `resume()`; until then the signal is ignored (SIG_IGN) and lost. So nothing
// is served, and no "listening" line printed, before both are registered: a harness that sends SIGTERM as soon as
// it reads that line would otherwise, now and then, leave the emulator running for good. The sources run on a
// queue of their own: the main queue only runs from `dispatchMain()`, after the wait below.
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
let signalQueue = DispatchQueue(label: "fm-emulator.signals")
let signalsRegistered = DispatchGroup()
let signalSources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
    let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
    source.setEventHandler { @Sendable in stopAndExit() }
    signalsRegistered.enter()
    source.setRegistrationHandler { @Sendable in signalsRegistered.leave() }
    source.resume()
    return source
}
signalsRegistered.wait()

do {
    let url = try emulator.start(host: options.host, port: options.port)
    let control = try options.controlPort.map { try emulator.startControl(host: options.host, port: $0) }
    writeStdout("listening on \(url.absoluteString)\n" + (control.map { "control on \($0.absoluteString)\n" } ?? ""))
} catch {
    writeStderr("fm-emulator: \(error)\n")
    exit(1)
}

// --stop-on-stdin-close: a thread blocks in read(2) on standard input, discarding what it reads; at end of file (or an
// error: a closed descriptor) it stops the emulator on the signal queue, so a signal and the close never run exit(3)
// at once.
if options.stopOnStdinClose {
    Thread.detachNewThread {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count > 0 || (count < 0 && errno == EINTR) { continue }
            break
        }
        signalQueue.async {
            writeStderrIfRoom("fm-emulator: standard input closed; stopping\n")
            stopAndExit()
        }
    }
}

withExtendedLifetime(signalSources) {
    dispatchMain()
}
