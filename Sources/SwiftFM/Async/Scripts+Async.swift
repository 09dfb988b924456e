import Foundation

extension DataAPI {
    /// Runs a script by name; a script error does not throw (read ``FMScriptResult/error``).
    /// - Parameters:
    ///   - layout: the layout the script runs on.
    ///   - script: the script name.
    ///   - parameter: the script parameter.
    /// - Throws: ``FMError`` when the call itself fails.
    public func runScript(layout: String, script: String, parameter: String? = nil) async throws -> FMScriptResult {
        try await bridge(Endpoints.runScript(layout: layout, script: script, parameter: parameter))
    }
}
