// fm-codegen: writes a Swift type per FileMaker layout from the layout metadata.
//
//   fm-codegen --host URL --database DB --username U --password P [--layout NAME]... --output DIR
//   fm-codegen --schema FILE [--layout NAME]... --output DIR
//   fm-codegen --metadata FILE [--layout NAME]... --output DIR
//   fm-codegen --odata FILE --output DIR
//
// FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD stand in for the missing server options. Every layout is
// generated when no --layout is given. --type-prefix P starts every type name with P. --check writes
// nothing and exits 1 when DIR's files differ from what would be written (for CI); with --layout it
// checks only those layouts' files. A layout that cannot be generated (an empty name, metadata that
// cannot be read) is reported and skipped, the others are generated; the exit status is 1 when a layout
// named by --layout was skipped. Files are written all or nothing. Same metadata, same bytes: the output
// has no dates or paths in it.
//
// --odata reads a saved OData `$metadata` document (JSON or XML CSDL, e.g.
// `curl -u user:pass https://host/fmi/odata/v4/DB/\$metadata -o metadata.xml`) and writes one type per
// entity set for `FMOData.records(as:from:query:)`, with the same naming, --type-prefix and --check rules;
// an entity set that cannot be generated is reported on stderr and skipped, the others are written
// (as a layout not named by --layout). A document that cannot be read writes nothing (exit status 1).
import Foundation
import FMCodegen
import SwiftFM

let usage = """
usage: fm-codegen --host URL --database DB --username U --password P [--layout NAME]... --output DIR [--type-prefix P] [--check]
       fm-codegen --schema FILE [--layout NAME]... --output DIR [--type-prefix P] [--check]
       fm-codegen --metadata FILE [--layout NAME]... --output DIR [--type-prefix P] [--check]
       fm-codegen --odata METADATA --output DIR [--type-prefix P] [--check]
  (METADATA: a saved GET /fmi/odata/v4/{database}/$metadata answer, JSON or XML)
  (FM_HOST, FM_DATABASE, FM_USER, FM_PASSWORD are read for missing server options)

"""

/// `text` for a message: control and format characters (an escape sequence, a line break, a bidi override
/// in a name from the metadata) written as `\u{…}`, so a name cannot drive the terminal or forge a line.
func shown(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator: out += "\\u{\(String(scalar.value, radix: 16))}"
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("fm-codegen: \(message)\n".utf8))
    exit(code)
}

var options: [String: String] = [:]
var layouts: [String] = []
var check = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--check": check = true
    case "--help", "-h":
        FileHandle.standardOutput.write(Data(usage.utf8))
        exit(0)
    case "--host", "--database", "--username", "--password", "--output", "--schema", "--metadata", "--odata", "--layout", "--type-prefix":
        guard let value = arguments.popFirst() else { fail("\(argument) needs a value\n\(usage)") }
        if argument == "--layout" { layouts.append(value) } else { options[argument] = value }
    default:
        fail("unknown argument \(argument)\n\(usage)")
    }
}
guard let output = options["--output"] else { fail("--output DIR is required\n\(usage)") }
let environment = ProcessInfo.processInfo.environment

if let odata = options["--odata"] {
    guard layouts.isEmpty else { fail("--layout does not apply to --odata (every entity set is generated)\n\(usage)") }
    let metadata: FMODataMetadata
    do {
        metadata = try ODataMetadataSource.read(URL(fileURLWithPath: odata))
    } catch {
        fail("reading the OData metadata failed, nothing written: \(shown("\(error)"))", code: 1)
    }
    let generated = ODataCodeGenerator.output(metadata, typePrefix: options["--type-prefix"] ?? "")
    for set in generated.skipped {
        FileHandle.standardError.write(Data("fm-codegen: skipped entity set \"\(shown(set.name))\": \(shown(set.reason))\n".utf8))
    }
    let directory = URL(fileURLWithPath: output)
    if check {
        let problems = MetadataSource.check(generated.files, in: directory, complete: true)
        for problem in problems { print(problem) }
        exit(problems.isEmpty ? 0 : 1)
    }
    do {
        let written = try MetadataSource.write(generated.files, to: directory)
        print("fm-codegen: \(generated.files.count) file(s) for OData database \(shown(ODataCodeGenerator.databaseName(metadata.namespace))), "
              + "\(written.count) changed, in \(output)"
              + (generated.skipped.isEmpty ? "" : "; \(generated.skipped.count) entity set(s) skipped"))
    } catch {
        fail("writing \(output) failed, nothing written: \(error)", code: 1)
    }
    exit(0)
}

let input: CodegenInput
do {
    if let metadata = options["--metadata"] {
        input = try MetadataSource.read(metadataFile: URL(fileURLWithPath: metadata), layouts: layouts)
    } else if let schema = options["--schema"] {
        input = try await MetadataSource.read(schemaFile: URL(fileURLWithPath: schema), layouts: layouts)
    } else {
        guard let host = options["--host"] ?? environment["FM_HOST"],
              let database = options["--database"] ?? environment["FM_DATABASE"],
              let username = options["--username"] ?? environment["FM_USER"],
              let password = options["--password"] ?? environment["FM_PASSWORD"] else {
            fail("give --schema FILE, or --host, --database, --username and --password (or FM_HOST, FM_DATABASE, FM_USER, FM_PASSWORD)\n\(usage)")
        }
        let api = DataAPI(configuration: FMConfiguration(host: host, database: database, username: username, password: password))
        input = try await MetadataSource.read(api: api, layouts: layouts)
    }
} catch let error as FMError {
    fail("reading the layouts failed: \(error.code) \(error.message)", code: 1)
} catch {
    fail("reading the layouts failed: \(shown("\(error)"))", code: 1)
}

let generated = CodeGenerator.output(input, typePrefix: options["--type-prefix"] ?? "")
let files = generated.files
for layout in generated.skipped {
    FileHandle.standardError.write(Data("fm-codegen: skipped \(layout)\n".utf8))
}
// A layout asked for by name and not generated fails the run (after the others are generated).
let missedNamed = !layouts.isEmpty && !generated.skipped.isEmpty
let directory = URL(fileURLWithPath: output)
if check {
    // With --layout, the folder may hold other layouts' files: only the named layouts' files are checked.
    let problems = MetadataSource.check(files, in: directory, complete: layouts.isEmpty)
    for problem in problems { print(problem) }
    exit(problems.isEmpty && !missedNamed ? 0 : 1)
}
do {
    let written = try MetadataSource.write(files, to: directory)
    print("fm-codegen: \(files.count) file(s) for database \(shown(input.database)), \(written.count) changed, in \(output)"
          + (generated.skipped.isEmpty ? "" : "; \(generated.skipped.count) layout(s) skipped"))
} catch {
    fail("writing \(output) failed, nothing written: \(error)", code: 1)
}
exit(missedNamed ? 1 : 0)
