#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import FMCapture
import Foundation

// `fm-emulator capture`: logs in to a FileMaker Server (or another emulator) with SwiftFM and writes a schema file.

let captureUsage = """
    usage: fm-emulator capture --host URL --database NAME --username NAME [--password TEXT]
                               [--records N] [--output FILE] [--keep-password] [--timeout SECONDS]

      --host URL        the server, e.g. https://fms.example.com or http://127.0.0.1:3000
      --database NAME   the database (file) name
      --username NAME   the account (read access to every layout is enough)
      --password TEXT   the password (default: the FM_PASSWORD environment variable)
      --records N       copy up to N records per layout (default 0: metadata only)
      --output FILE     the schema file to write (default: captured-schema.json; - for stdout)
      --keep-password   write the real password into the file (default: the copy's password is "admin")
      --timeout SECONDS per-request timeout (default 30)

    Writes layouts with folders, fields with types, portals, value lists, table occurrences as far as
    layout metadata and records reveal them, scripts by name (stubs: the Data API cannot read script
    steps) and, with --records, records. Reports what was guessed and what was skipped on stderr; a
    partial capture is still written.

    Exit codes: 0 complete; 3 written, but some items were skipped (listed on stderr); 2 bad arguments;
    4 the account or password was refused; 5 the server cannot be reached; 6 another failure before
    anything was captured (unknown database, no layout list); 1 the output file cannot be written.

    """

/// Runs `fm-emulator capture …` and exits with its code.
func runCaptureCommand(_ arguments: [String]) -> Never {
    var host: String?, database: String?, username: String?
    var password = ProcessInfo.processInfo.environment["FM_PASSWORD"]
    var records = 0, timeout: TimeInterval = 30
    var output = "captured-schema.json"
    var keepPassword = false
    var i = 0
    func fail(_ message: String) -> Never {
        writeStderr("fm-emulator capture: \(message)\n")
        writeStderr(captureUsage)
        exit(2)
    }
    while i < arguments.count {
        var argument = arguments[i]
        var inline: String?
        if argument.hasPrefix("--"), let eq = argument.firstIndex(of: "=") {
            inline = String(argument[argument.index(after: eq)...])
            argument = String(argument[..<eq])
        }
        func value() -> String {
            if let inline { return inline }
            i += 1
            guard i < arguments.count else { fail("\(argument) needs a value") }
            return arguments[i]
        }
        switch argument {
        case "--help", "-h":
            writeStdout(captureUsage)
            exit(0)
        case "--host": host = value()
        case "--database": database = value()
        case "--username": username = value()
        case "--password": password = value()
        case "--output", "-o": output = value()
        case "--keep-password": keepPassword = true
        case "--records":
            let v = value()
            guard let n = Int(v), n >= 0 else { fail("--records needs a whole number ≥ 0, not \(v)") }
            records = n
        case "--timeout":
            let v = value()
            guard let t = TimeInterval(v), t > 0 else { fail("--timeout needs a positive number of seconds, not \(v)") }
            timeout = t
        default:
            fail("unknown argument \(arguments[i])")
        }
        i += 1
    }
    guard let host, !host.isEmpty else { fail("--host is required") }
    guard let database, !database.isEmpty else { fail("--database is required") }
    guard let username, !username.isEmpty else { fail("--username is required") }
    guard let password else { fail("--password (or FM_PASSWORD) is required") }
    var options = CaptureOptions(host: host, database: database, username: username, password: password,
                                 records: records, timeout: timeout)
    options.keepPassword = keepPassword
    let target = output
    Task.detached {
        exit(await performCapture(options, output: target))
    }
    dispatchMain()
}

/// Captures and writes the file; returns the exit code.
func performCapture(_ options: CaptureOptions, output: String) async -> Int32 {
    let result: CaptureResult
    do {
        result = try await SchemaCapture.run(options)
    } catch let e as CaptureError {
        writeStderr("fm-emulator capture: \(e.message)\n")
        switch e.kind {
        case .badCredentials: return 4
        case .unreachable: return 5
        case .failed: return 6
        }
    } catch {
        writeStderr("fm-emulator capture: \(error)\n")
        return 6
    }
    if output == "-" {
        writeStdout(String(decoding: result.schemaJSON, as: UTF8.self) + "\n")
    } else {
        do {
            try result.schemaJSON.write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            writeStderr("fm-emulator capture: cannot write \(output): \(error.localizedDescription)\n")
            return 1
        }
    }
    for note in result.notes { writeStderr("note: \(note)\n") }
    for item in result.skipped { writeStderr("skipped: \(item)\n") }
    let place = output == "-" ? "stdout" : output
    writeStderr("fm-emulator capture: wrote \(place)\(result.isComplete ? "" : " (partial: \(result.skipped.count) item(s) skipped)")\n")
    return result.isComplete ? 0 : 3
}
