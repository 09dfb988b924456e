// `swift package --allow-writing-to-package-directory generate-models --schema FILE --output DIR`: runs
// fm-codegen (built from this package) with the arguments given; `--schema`, `--metadata`, `--odata` and `--output` paths that are not
// absolute are read from the package's directory. Every fm-codegen option works (`--host`…, `--layout`,
// `--type-prefix`, `--check`); FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD are passed through.
import Foundation
import PackagePlugin

@main
struct GenerateModels: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "fm-codegen")
        let root = context.package.directoryURL
        var resolved: [String] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            resolved.append(argument)
            if ["--schema", "--metadata", "--odata", "--output"].contains(argument), let value = remaining.popFirst() {
                resolved.append(value.hasPrefix("/") ? value : root.appendingPathComponent(value).path)
            }
        }
        let process = Process()
        process.executableURL = tool.url
        process.arguments = resolved
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            Diagnostics.error("fm-codegen \(shown(resolved).joined(separator: " ")) ended with status \(process.terminationStatus)")
            throw GenerateModelsError(status: process.terminationStatus)
        }
    }
}

/// `arguments` as the failure line shows them: the value of `--password` is `***` (the line goes to the terminal and to
/// CI logs; the password stays in the process's arguments only).
func shown(_ arguments: [String]) -> [String] {
    var shown: [String] = []
    var hideNext = false
    for argument in arguments {
        shown.append(hideNext ? "***" : argument)
        hideNext = !hideNext && argument == "--password"
    }
    return shown
}

struct GenerateModelsError: Error, CustomStringConvertible {
    var status: Int32
    var description: String { "fm-codegen ended with status \(status)" }
}
