import Foundation
import Testing
import SwiftFMEmulator

// A schema path that names a directory (`--schema tests/`, `Emulator(schemaFile:)` with a folder) is refused with a
// message that says so, not Foundation's "The operation could not be completed. (NSCocoaErrorDomain error 256.)".

@Suite("A schema path that is a directory is named as one")
struct SchemaPathIsADirectoryRuleTests {
    @Test("Emulator(schemaFile:) with a directory throws an error saying it is a directory")
    func directoryIsNamed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("schema-dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            _ = try Emulator(schemaFile: directory)
            Issue.record("a directory loaded as a schema")
        } catch let error as EmulatorSchemaError {
            #expect(error.message.contains("is a directory"), "\(error)")
            #expect(error.message.contains(directory.path), "\(error)")
            #expect(!error.message.contains("NSCocoaErrorDomain"), "\(error)")
        }
    }
}
