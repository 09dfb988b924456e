import Foundation

/// One request as the emulator received it, for assertions in tests.
public struct RecordedRequest: Sendable {
    /// The method (`GET`, `POST`, …).
    public let method: String
    /// The raw request target, percent-encoding intact.
    public let target: String
    /// The path with each segment percent-decoded once (segments joined with `/`, so an encoded
    /// `%2F` inside a name also shows as `/`).
    public let decodedPath: String
    /// The header fields in the order received.
    public let headers: [(name: String, value: String)]
    /// The body, when the emulator keeps bodies (``Emulator/logsBodies``); otherwise empty.
    public let body: Data
    /// The size of the body received, in bytes (also when the body itself is not kept).
    public let bodyByteCount: Int
    /// The HTTP status the emulator answered.
    public let status: Int
    /// The session token the request carried (its `Bearer` token, or the token of a logout path), if any;
    /// count distinct values to see how many sessions a client used.
    public let token: String?

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The body as UTF-8 text (empty when it is not UTF-8).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

extension RecordedRequest: CustomStringConvertible {
    /// `METHOD path → status`, with the request's session token replaced by `<token>` (never printable).
    public var description: String {
        var path = decodedPath
        if let token, !token.isEmpty { path = path.replacingOccurrences(of: token, with: "<token>") }
        return "\(method) \(EmulatorCore.redact(path, issued: nil)) → \(status)"
    }
}

/// The request log: oldest entries dropped first once it holds more than `maxCount` entries or more
/// than `maxBytes` bytes (target, headers and kept bodies). Appending is amortised O(1).
struct RequestLogStore: Sendable {
    private var entries: [RecordedRequest] = []
    private var sizes: [Int] = []
    private var head = 0
    /// The sequence number of `entries[0]` (numbers count every entry ever appended).
    private var firstSequence = 0
    /// Bytes held by the live entries.
    private(set) var bytes = 0
    /// The most entries kept.
    var maxCount = 10_000 { didSet { trim() } }
    /// The most bytes kept.
    var maxBytes = 32 * 1024 * 1024 { didSet { trim() } }
    /// Whether bodies are kept (only their size otherwise).
    var keepsBodies = false

    /// The live entries, oldest first.
    var all: [RecordedRequest] { Array(entries[head...]) }
    var count: Int { entries.count - head }

    /// The bytes an entry holds.
    static func size(of r: RecordedRequest) -> Int {
        r.target.utf8.count + r.decodedPath.utf8.count + r.body.count + 64
            + r.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
    }

    /// Appends `r`; returns its sequence number (for ``amend(_:status:)``).
    @discardableResult
    mutating func append(_ r: RecordedRequest) -> Int {
        let size = RequestLogStore.size(of: r)
        let sequence = firstSequence + entries.count
        entries.append(r)
        sizes.append(size)
        bytes += size
        trim()
        return sequence
    }

    /// Sets the status of entry `sequence`, if it is still kept: an answer refused after the entry was written
    /// (``AnswerTooLarge``, outside the lock) is logged as what the client got.
    mutating func amend(_ sequence: Int, status: Int) {
        let index = sequence - firstSequence
        guard index >= head, index < entries.count else { return }
        let r = entries[index]
        entries[index] = RecordedRequest(method: r.method, target: r.target, decodedPath: r.decodedPath, headers: r.headers, body: r.body,
                                         bodyByteCount: r.bodyByteCount, status: status, token: r.token)
    }

    mutating func removeAll() {
        firstSequence += entries.count
        entries.removeAll()
        sizes.removeAll()
        head = 0
        bytes = 0
    }

    private mutating func trim() {
        while count > 0, count > maxCount || bytes > maxBytes {
            bytes -= sizes[head]
            head += 1
        }
        // Compact once the dead prefix is as large as the live part.
        if head > 0, head >= entries.count - head {
            entries.removeFirst(head)
            sizes.removeFirst(head)
            firstSequence += head
            head = 0
        }
    }
}

/// The tokens an emulator issued, most recent 4,096 of them, for redaction.
typealias IssuedTokens = RecentSet

/// The most recent `capacity` distinct strings inserted (the oldest forgotten first): a set whose memory
/// stays bounded however long the emulator runs.
struct RecentSet: Sendable {
    private var members: Set<String> = []
    private var order: [String] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

    mutating func insert(_ token: String) {
        guard members.insert(token).inserted else { return }
        order.append(token)
        if order.count - head > capacity {
            members.remove(order[head])
            head += 1
            if head >= capacity { order.removeFirst(head); head = 0 }
        }
    }

    func contains(_ token: String) -> Bool { members.contains(token) }

    /// How many strings it holds (at most `capacity`).
    var count: Int { members.count }

    mutating func removeAll() {
        members.removeAll()
        order.removeAll()
        head = 0
    }
}
