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
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        result = try container.lenientString(.result)
        error = try container.lenientString(.error) ?? "0"
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
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        func read(_ suffix: String) throws -> FMScriptResult? {
            let result = try container.lenientString(AnyCodingKey("scriptResult" + suffix))
            let error = try container.lenientString(AnyCodingKey("scriptError" + suffix))
            guard result != nil || error != nil else { return nil }
            return FMScriptResult(result: result, error: error ?? "0")
        }
        script = try read("")
        prerequest = try read(".prerequest")
        presort = try read(".presort")
    }

    /// Reads the script keys of a raw `response` dictionary.
    init(raw response: [String: Any]) {
        func read(_ suffix: String) -> FMScriptResult? {
            let result = RawJSON.string(response["scriptResult" + suffix])
            let error = RawJSON.string(response["scriptError" + suffix])
            guard result != nil || error != nil else { return nil }
            return FMScriptResult(result: result, error: error ?? "0")
        }
        script = read("")
        prerequest = read(".prerequest")
        presort = read(".presort")
    }
}
