import Foundation

extension DataAPI {
    /// Runs a script by name (`GET …/layouts/{layout}/script/{script}?script.param=`).
    ///
    /// The code is `"0"` when the call succeeded, even if the script itself failed: read
    /// ``FMScriptResult/error`` for the script's own code.
    ///
    /// - Parameters:
    ///   - layout: the layout the script runs on.
    ///   - script: the script name (sent percent-encoded).
    ///   - parameter: the script parameter.
    ///   - completion: the script result and error, or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func runScript(layout: String, script: String, parameter: String? = nil,
                          completion: sending @escaping (FMScriptResult?, String) -> Void) -> FMRequest {
        perform(Endpoints.runScript(layout: layout, script: script, parameter: parameter)) { completion($0.value, $0.code) }
    }
}
