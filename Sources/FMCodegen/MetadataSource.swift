import Foundation
import SwiftFM
import SwiftFMEmulator

/// Reads the generator's input from a Data API server or a schema file.
public enum MetadataSource {
    /// Reads the metadata of `layouts` (every layout when empty) through `api`, then logs out.
    ///
    /// - Throws: ``FMError`` from the server (`"105"` for a layout that does not exist).
    public static func read(api: DataAPI, layouts selected: [String] = []) async throws -> CodegenInput {
        do {
            let entries = try await api.layouts()
            var tables: [String: String] = [:]
            var names: [String] = []
            func walk(_ entries: [FMLayoutEntry]) {
                for entry in entries {
                    if entry.isFolder { walk(entry.children); continue }
                    if tables[entry.name] == nil { names.append(entry.name) }
                    tables[entry.name] = entry.table ?? tables[entry.name] ?? ""
                }
            }
            walk(entries)
            var layouts: [CodegenInput.Layout] = []
            var seen = Set<String>()
            for name in selected.isEmpty ? names : selected where seen.insert(name).inserted {
                let metadata = try await api.layoutMetadata(layout: name)
                let table = tables[name].flatMap { $0.isEmpty ? nil : $0 }
                layouts.append(CodegenInput.Layout(name: name, table: table, metadata: metadata))
            }
            try? await api.logout()
            return CodegenInput(database: api.configuration.database, layouts: layouts)
        } catch {
            try? await api.logout()
            throw error
        }
    }

    /// Reads the layouts of a schema file by serving it from an emulator on loopback and reading its
    /// metadata through SwiftFM, exactly as from a server (so both give the same code).
    ///
    /// - Throws: ``EmulatorSchemaError`` for a bad schema file, ``FMError`` from the reads.
    public static func read(schemaFile: URL, layouts selected: [String] = []) async throws -> CodegenInput {
        let schema = try EmulatorSchema.load(from: schemaFile)
        let emulator = try Emulator(schemaFile: schemaFile)
        let url = try emulator.start(host: "127.0.0.1", port: 0)
        defer { emulator.stop() }
        let account = schema.accounts.first
        let configuration = FMConfiguration(host: url.absoluteString, database: schema.database,
                                            username: account?.username ?? "admin", password: account?.password ?? "admin")
        let api = DataAPI(configuration: configuration)
        return try await read(api: api, layouts: selected)
    }

    /// Writes `files` into `directory` (created when missing); a file whose bytes are already there is
    /// not touched. Returns the names written.
    @discardableResult
    public static func write(_ files: [GeneratedFile], to directory: URL) throws -> [String] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var written: [String] = []
        for file in files {
            let url = directory.appendingPathComponent(file.name)
            let data = Data(file.contents.utf8)
            if (try? Data(contentsOf: url)) == data { continue }
            try data.write(to: url, options: .atomic)
            written.append(file.name)
        }
        return written
    }
}
