import Foundation

/// The outcome of one script: what it returned (`Exit Script`) and its error code.
///
/// A script error never fails the request that ran it: the call's code stays `"0"` while
/// ``error`` carries the script's own code.
public struct FMScriptResult: Sendable, Hashable, Codable {
    /// The script result (`scriptResult…`), `nil` when the script exited without one.
    public var result: String?
    /// The script error code (`scriptError…`), `"0"` on success.
    public var error: String

    /// Creates a script result.
    public init(result: String?, error: String) {
        self.result = result
        self.error = error
    }

    /// `true` when the script reported no error.
    public var succeeded: Bool { error == "0" }

    enum CodingKeys: String, CodingKey {
        case result = "scriptResult"
        case error = "scriptError"
    }

    /// Decodes `{"scriptResult": …, "scriptError": …}` (the run-script answer); a missing error means `"0"`.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when `scriptError` is not a FileMaker code (see
    ///   ``FMScriptResults/init(from:)``).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        result = try container.lenientString(.result)
        error = try FMScriptResults.code(container.lenientString(.error), at: container.codingPath + [CodingKeys.error])
    }

    /// Encodes the wire shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(result, forKey: .result)
        try container.encode(error, forKey: .error)
    }
}

/// The results of the scripts that ran with a record or find request; `nil` for those that did not run.
public struct FMScriptResults: Sendable, Hashable, Decodable {
    /// The result of `script` (after the action and the sort).
    public var script: FMScriptResult?
    /// The result of `script.prerequest`.
    public var prerequest: FMScriptResult?
    /// The result of `script.presort`.
    public var presort: FMScriptResult?

    /// Creates script results.
    public init(script: FMScriptResult? = nil, prerequest: FMScriptResult? = nil, presort: FMScriptResult? = nil) {
        self.script = script
        self.prerequest = prerequest
        self.presort = presort
    }

    /// No script ran.
    public static let none = FMScriptResults()

    /// `true` when no script result came back.
    public var isEmpty: Bool { script == nil && prerequest == nil && presort == nil }

    /// Reads the `scriptResult*`/`scriptError*` keys next to the other keys of a `response` object.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when a `scriptError*` is not a FileMaker code (an optional `-` and
    ///   digits, as `messages[0].code`): a caller compares it with `"0"` and may log it, so text, a second
    ///   spelling (`"00"`) or a client-side code (`"-1003"`) is refused, as the code of an error is.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        func read(_ suffix: String) throws -> FMScriptResult? {
            let result = try container.lenientString(AnyCodingKey("scriptResult" + suffix))
            let errorKey = AnyCodingKey("scriptError" + suffix)
            let error = try container.lenientString(errorKey)
            guard result != nil || error != nil else { return nil }
            return FMScriptResult(result: result, error: try Self.code(error, at: container.codingPath + [errorKey]))
        }
        script = try read("")
        prerequest = try read(".prerequest")
        presort = try read(".presort")
    }

    /// Reads the script keys of a raw `response` dictionary; `-1007` when a `scriptError*` is not a FileMaker code.
    init(raw response: [String: Any], status: Int) throws(FMError) {
        // Most answers ran no script: a look at the few keys of `response` spares six lookups, each hashing its key.
        guard response.keys.contains(where: { $0.utf8.starts(with: "script".utf8) }) else {
            (script, prerequest, presort) = (nil, nil, nil)
            return
        }
        func read(_ suffix: String) throws(FMError) -> FMScriptResult? {
            let result = RawJSON.string(response["scriptResult" + suffix])
            let error = response["scriptError" + suffix].flatMap { $0 is NSNull ? nil : $0 }
            guard result != nil || error != nil else { return nil }
            guard let code = error.map(FMError.scriptCode) ?? "0" else {
                throw FMError.malformed("scriptError\(suffix) is not a FileMaker code", status: status)
            }
            return FMScriptResult(result: result, error: code)
        }
        script = try read("")
        prerequest = try read(".prerequest")
        presort = try read(".presort")
    }

    /// A `scriptError*` as read by a `Decodable` container: `"0"` when absent, else a FileMaker code (not `""`).
    static func code(_ text: String?, at path: [any CodingKey]) throws -> String {
        guard let text else { return "0" }
        guard let code = FMError.scriptCode(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "not a FileMaker code"))
        }
        return code
    }
}
