import Foundation

/// What `swiftc -typecheck` said: its exit status and its diagnostics.
public struct TypeCheckResult: Sendable {
    /// The compiler's exit status (0: no error).
    public let status: Int32
    /// Everything it wrote, errors and warnings.
    public let diagnostics: String
}

/// A type-check that could not be run (no compiler, no built SwiftFM module).
public struct TypeCheckUnavailable: Error, CustomStringConvertible {
    public let description: String
}

/// Type-checks `files` as one module against the SwiftFM (and SwiftFMEmulator) modules this test run was built with (found above the
/// test binary), with `swiftc` from the `PATH`. `arguments` come before the files (`-swift-version 6`,
/// `-parse-as-library`, `-module-name …`); `scratch` holds the module cache.
public func typecheckAgainstSwiftFM(_ files: [URL], arguments: [String], scratch: URL) throws -> TypeCheckResult {
    let modules = try builtModulesDirectory()
    let compiler = try swiftcOnPath()
    // SwiftFM imports the C module CFMCurl (libcurl's bridge), SwiftFMEmulator also CFMTLS (OpenSSL's): their module
    // maps are where SwiftPM wrote them.
    let moduleMaps = ["CFMCurl", "CFMTLS"].flatMap { module -> [String] in
        let map = modules.deletingLastPathComponent().appendingPathComponent("\(module).build/module.modulemap")
        return FileManager.default.fileExists(atPath: map.path) ? ["-Xcc", "-fmodule-map-file=" + map.path] : []
    }
    let process = try ChildProcess(compiler, ["-typecheck"] + arguments + ["-I", modules.path] + moduleMaps
        + ["-module-cache-path", scratch.appendingPathComponent("cache").path] + files.map(\.path), error: .sameAsOutput)
    let diagnostics = String(decoding: process.standardOutput?.readAllRetryingInterrupts() ?? Data(), as: UTF8.self)
    process.waitUntilExit()
    return TypeCheckResult(status: process.terminationStatus, diagnostics: diagnostics)
}

/// The `Modules` folder holding `SwiftFM.swiftmodule`, above the running test binary.
private func builtModulesDirectory() throws -> URL {
    let executable = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                                          ?? CommandLine.arguments[0]).standardizedFileURL
    var directory = executable.deletingLastPathComponent()
    for _ in 0..<6 {
        let modules = directory.appendingPathComponent("Modules")
        if FileManager.default.fileExists(atPath: modules.appendingPathComponent("SwiftFM.swiftmodule").path) { return modules }
        directory = directory.deletingLastPathComponent()
    }
    throw TypeCheckUnavailable(description: "no Modules/SwiftFM.swiftmodule above \(executable.path)")
}

/// `swiftc` on the `PATH`.
private func swiftcOnPath() throws -> URL {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    for directory in path.split(separator: ":") {
        let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("swiftc")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw TypeCheckUnavailable(description: "no swiftc on the PATH")
}
