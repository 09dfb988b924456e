import Foundation
import SwiftFM

/// What `fm-emulator capture` reads from a live server and how.
public struct CaptureOptions: Sendable {
    /// The server: a URL (`https://fms.example.com`, `http://127.0.0.1:3000`) or a bare host.
    public var host: String
    /// The database (file) name.
    public var database: String
    /// The account.
    public var username: String
    /// The password.
    public var password: String
    /// Records to copy per layout (0: none; the layouts are still read once to learn their table occurrence).
    public var records: Int
    /// Per-request timeout in seconds.
    public var timeout: TimeInterval
    /// Whether the account's real password goes into the file (default: the copy's password is `"admin"`).
    public var keepPassword = false

    /// Creates options.
    public init(host: String, database: String, username: String, password: String, records: Int = 0, timeout: TimeInterval = 30) {
        self.host = host
        self.database = database
        self.username = username
        self.password = password
        self.records = records
        self.timeout = timeout
    }
}

/// The outcome of a capture: the schema file's text and what could not be captured.
public struct CaptureResult: Sendable {
    /// The schema file (JSON, see Docs/SCHEMA.md).
    public var schemaJSON: Data
    /// Items left out, each naming the layout, portal, field or script and why.
    public var skipped: [String]
    /// Things that were guessed or stubbed (script steps, auto-enter kinds, inferred match fields).
    public var notes: [String]
    /// Whether everything the Data API showed was captured.
    public var isComplete: Bool { skipped.isEmpty }
}

/// Why a capture could not start.
public struct CaptureError: Error, CustomStringConvertible, Sendable {
    /// What went wrong.
    public enum Kind: Sendable {
        /// The account or password was refused (FileMaker 212).
        case badCredentials
        /// The server could not be reached (connection refused, DNS, TLS, timeout).
        case unreachable
        /// Anything else before the first layout was read (unknown database, no layout list…).
        case failed
    }

    /// The kind of failure.
    public let kind: Kind
    /// A message for the user.
    public let message: String

    /// The message.
    public var description: String { message }
}

/// Copies a live solution into an emulator schema file through the Data API.
///
/// Layouts (with folders), their fields with types and options, portals, value lists, the table occurrences
/// that layout metadata and records reveal, scripts by name (stubbed: the Data API cannot read script steps)
/// and optionally records. Relationships are not visible through the Data API: a portal's match fields are
/// inferred from the captured records when they show it (the notes say so); with records, other relationships
/// (related layout fields, fields further away, cartesian or filtered portals) are rebuilt as snapshots of
/// the captured records; without records they are skipped.
public enum SchemaCapture {
    /// Runs a capture.
    /// - Throws: ``CaptureError`` when the login fails or the layout list cannot be read; later failures
    ///   (one layout, one record read) are listed in ``CaptureResult/skipped`` instead.
    public static func run(_ options: CaptureOptions) async throws -> CaptureResult {
        var configuration = FMConfiguration(host: options.host, database: options.database,
                                            username: options.username, password: options.password)
        configuration.timeout = options.timeout
        let api = DataAPI(configuration: configuration)
        do {
            _ = try await api.login()
        } catch let e as FMError {
            throw classify(e, during: "login")
        }
        let layoutTree: [FMLayoutEntry]
        let scriptTree: [FMScriptEntry]
        do {
            layoutTree = try await api.layouts()
        } catch let e as FMError {
            try? await api.logout()
            throw classify(e, during: "reading the layout list")
        }
        var builder = SchemaBuilder(database: options.database, username: options.username, password: options.password)
        builder.keepPassword = options.keepPassword
        builder.recordsKept = options.records > 0
        do {
            scriptTree = try await api.scripts()
        } catch let e as FMError {
            scriptTree = []
            builder.skipped.append("scripts: the script list could not be read (FileMaker \(e.code): \(e.message))")
        }
        builder.addLayoutTree(layoutTree)
        for layout in builder.layoutNames {
            let meta: FMLayoutMetadata
            do {
                meta = try await api.layoutMetadata(layout: layout)
            } catch let e as FMError {
                builder.skipped.append("layout \(layout): metadata failed (FileMaker \(e.code): \(e.message))")
                builder.dropLayout(layout)
                continue
            }
            var found: FMFoundSet?
            do {
                found = try await api.getRecords(layout: layout, limit: max(1, options.records))
            } catch let e as FMError where e.code == "401" || e.code == "101" {
                // An empty table (FileMaker Server answers a range read of one 101 "Record is missing"): no
                // records to copy, nothing failed.
                found = nil
            } catch let e as FMError {
                builder.skipped.append("layout \(layout): records failed (FileMaker \(e.code): \(e.message))")
            }
            builder.addLayout(layout, meta: meta, found: found, keepRecords: options.records > 0)
        }
        builder.addScriptTree(scriptTree)
        try? await api.logout()
        let json = builder.build(source: options.host)
        return CaptureResult(schemaJSON: Data(json.render().utf8), skipped: builder.skipped, notes: builder.notes)
    }

    static func classify(_ e: FMError, during step: String) -> CaptureError {
        switch e.code {
        case "212":
            return CaptureError(kind: .badCredentials, message: "\(step): the account or password was refused (FileMaker 212)")
        case FMError.ClientCode.transport, FMError.ClientCode.timeout:
            return CaptureError(kind: .unreachable, message: "\(step): the server cannot be reached: \(e.message)")
        default:
            return CaptureError(kind: .failed, message: "\(step) failed: FileMaker \(e.code): \(e.message)")
        }
    }
}

/// An ordered JSON value for writing the schema file.
indirect enum OJSON {
    case string(String)
    case number(String)
    case bool(Bool)
    case array([OJSON])
    case object([(String, OJSON)])

    func render(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case let .string(s): return OJSON.quote(s)
        case let .number(n): return n
        case let .bool(b): return b ? "true" : "false"
        case let .array(items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy({ if case .string = $0 { return true }; if case .number = $0 { return true }; return false }) {
                return "[" + items.map { $0.render() }.joined(separator: ", ") + "]"
            }
            return "[\n" + items.map { inner + $0.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case let .object(pairs):
            if pairs.isEmpty { return "{}" }
            let flat = pairs.allSatisfy { p in
                switch p.1 {
                case .string, .number, .bool: return true
                default: return false
                }
            }
            if flat, pairs.count <= 6 {
                return "{ " + pairs.map { OJSON.quote($0.0) + ": " + $0.1.render() }.joined(separator: ", ") + " }"
            }
            return "{\n" + pairs.map { inner + OJSON.quote($0.0) + ": " + $0.1.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
            }
        }
        return out + "\""
    }
}
