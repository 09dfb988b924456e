import Foundation

/// What a registered script sees when it runs.
public struct ScriptInvocation: Sendable {
    /// The script name as requested.
    public let name: String
    /// The script parameter (`script.param` …), or `nil` when none was sent.
    public let parameter: String?
    /// The layout of the request.
    public let layout: String
    /// The database name.
    public let database: String
    /// When the script runs: `prerequest`, `presort` or `after` (the `script` key), or `run` (E18).
    public let phase: String
    /// The number of records in the current found set (the table for `prerequest` and `run`).
    public let foundCount: Int
}

/// How a script ends: its result (`scriptResult`, omitted when `nil`) and error (`scriptError`).
public struct ScriptOutcome: Sendable, Equatable {
    /// The text returned by Exit Script, or `nil` for none.
    public var result: String?
    /// The script error, `"0"` for success.
    public var error: String

    /// Creates an outcome.
    public init(result: String? = nil, error: String = "0") {
        self.result = result
        self.error = error
    }

    /// A successful outcome returning `text`.
    public static func result(_ text: String) -> ScriptOutcome { ScriptOutcome(result: text) }
    /// A failing outcome with script error `code`.
    public static func error(_ code: String) -> ScriptOutcome { ScriptOutcome(result: nil, error: code) }
}
