import Foundation
import SwiftFM
import SwiftFMEmulator
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the generator's input from a Data API server, a schema file or a metadata file, and writes its output.
public enum MetadataSource {
    /// Reads the metadata of `layouts` (every layout when empty) through `api`, then logs out.
    ///
    /// A layout whose metadata cannot be read (an empty name, one the server does not have: `105`, an
    /// answer of the wrong shape) is skipped and listed in ``CodegenInput/skipped``; the others are read.
    /// The database's other layouts are listed in ``CodegenInput/otherLayouts`` (for stable type names).
    ///
    /// - Throws: ``FMError`` when the server cannot be used at all (connection, sign-in, the layout list).
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
            var skipped: [SkippedLayout] = []
            var seen = Set<[UInt32]>()
            let wanted = selected.isEmpty ? names : selected
            for name in wanted where seen.insert(Naming.exactKey(name)).inserted {
                do {
                    let metadata = try await api.layoutMetadata(layout: name)
                    let table = tables[name].flatMap { $0.isEmpty ? nil : $0 }
                    layouts.append(CodegenInput.Layout(name: name, table: table, metadata: metadata))
                } catch let error as FMError where skips(error) {
                    skipped.append(SkippedLayout(name: name, reason: "its metadata cannot be read: \(error.code) \(error.message)"))
                }
            }
            try? await api.logout()
            let others = names.filter { !seen.contains(Naming.exactKey($0)) }
            return CodegenInput(database: api.configuration.database, layouts: layouts, otherLayouts: others, skipped: skipped)
        } catch {
            try? await api.logout()
            throw error
        }
    }

    /// `true` for an error about one layout (skip it), `false` for one about the server or the session (stop).
    static func skips(_ error: FMError) -> Bool {
        switch error.code {
        case FMError.ClientCode.invalidArgument, FMError.ClientCode.malformedResponse, FMError.ClientCode.emptyResult,
             FMError.ClientCode.responseTooLarge:
            return true
        case "212", "952":   // sign-in and token: every layout would fail
            return false
        default:
            return (Int(error.code) ?? -1) > 0
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

    /// A metadata file could not be read.
    public struct MetadataFileError: Error, CustomStringConvertible {
        /// What is wrong.
        public var description: String
    }

    /// Reads layouts from a metadata file: the layout metadata answers of a server, saved as JSON.
    ///
    /// ```json
    /// {"database": "Music",
    ///  "layouts": [{"name": "Artists", "table": "Artists",
    ///               "metadata": {"fieldMetaData": [{"name": "id", "result": "number", "autoEnter": true}],
    ///                            "portalMetaData": {"albums": [{"name": "Albums::title"}]}}}]}
    /// ```
    ///
    /// `metadata` is a layout metadata `response` as the Data API sends it (missing keys take their
    /// defaults). `layouts` picks layouts by name (every layout when empty); one named but absent is skipped.
    ///
    /// - Throws: ``MetadataFileError`` when the file cannot be read or is not of this shape.
    public static func read(metadataFile: URL, layouts selected: [String] = []) throws -> CodegenInput {
        struct File: Decodable {
            struct Layout: Decodable {
                var name: String
                var table: String?
                var metadata: FMLayoutMetadata?
            }
            var database: String
            var layouts: [Layout]
        }
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(contentsOf: metadataFile))
        } catch {
            throw MetadataFileError(description: "\(metadataFile.path): \(error)")
        }
        let wanted = Set(selected.map(Naming.exactKey))
        var layouts: [CodegenInput.Layout] = []
        var others: [String] = []
        var found = Set<[UInt32]>()
        for layout in file.layouts {
            guard wanted.isEmpty || wanted.contains(Naming.exactKey(layout.name)) else {
                others.append(layout.name)
                continue
            }
            found.insert(Naming.exactKey(layout.name))
            layouts.append(CodegenInput.Layout(name: layout.name, table: layout.table,
                                               metadata: layout.metadata ?? FMLayoutMetadata(fieldMetaData: [])))
        }
        var skipped: [SkippedLayout] = []
        var reported = Set<[UInt32]>()
        for name in selected where !found.contains(Naming.exactKey(name)) && reported.insert(Naming.exactKey(name)).inserted {
            skipped.append(SkippedLayout(name: name, reason: "it is not in \(metadataFile.lastPathComponent)"))
        }
        return CodegenInput(database: file.database, layouts: layouts, otherLayouts: others, skipped: skipped)
    }

    /// What differs between `files` and `directory`: `differs: X.swift` for a file whose bytes are not
    /// there, and, when `complete` (every layout was generated), `not generated: Y.swift` for a Swift
    /// file of the directory that is not among `files`. Empty when the directory is up to date.
    /// With `complete` false (layouts named with `--layout`), other layouts' files may share the folder.
    public static func check(_ files: [GeneratedFile], in directory: URL, complete: Bool) -> [String] {
        let stale = files.filter { (try? Data(contentsOf: directory.appendingPathComponent($0.name))) != Data($0.contents.utf8) }
        let expected = Set(files.map { Naming.exactKey($0.name) })
        let extra = !complete ? [] : ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasSuffix(".swift") && !expected.contains(Naming.exactKey($0)) }.sorted()
        return stale.map { "differs: \($0.name)" } + extra.map { "not generated: \($0)" }
    }

    /// Writes `files` into `directory` (created when missing), all or nothing: every changed file is
    /// first written beside its place under a temporary name, then each is renamed into place; when any
    /// write fails, the temporary files are removed and no file is changed. A file whose bytes are
    /// already there is not touched. Returns the names written.
    ///
    /// - Throws: the file system's error (nothing written).
    @discardableResult
    public static func write(_ files: [GeneratedFile], to directory: URL) throws -> [String] {
        let changed = files.filter { (try? Data(contentsOf: directory.appendingPathComponent($0.name))) != Data($0.contents.utf8) }
        guard !changed.isEmpty else { return [] }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var staged: [(temporary: URL, final: URL)] = []
        do {
            for (index, file) in changed.enumerated() {
                let temporary = directory.appendingPathComponent(".fm-codegen-\(ProcessInfo.processInfo.processIdentifier)-\(index).tmp")
                // A new file, never through what is there: a link planted under the temporary name would
                // have sent the write outside the folder.
                try? FileManager.default.removeItem(at: temporary)
                staged.append((temporary, directory.appendingPathComponent(file.name)))
                try Data(file.contents.utf8).write(to: temporary, options: .withoutOverwriting)
            }
            // Every target name must be usable before any file is replaced (a name too long, or a folder in
            // the way, fails here).
            for (temporary, final) in staged {
                _ = try FileManager.default.attributesOfItem(atPath: temporary.path)
                guard final.lastPathComponent.utf8.count <= 255 else {
                    throw CocoaError(.fileWriteInvalidFileName, userInfo: [NSFilePathErrorKey: final.path])
                }
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: final.path, isDirectory: &isDirectory), isDirectory.boolValue {
                    throw CocoaError(.fileWriteFileExists, userInfo: [NSFilePathErrorKey: final.path])
                }
            }
        } catch {
            for (temporary, _) in staged { try? FileManager.default.removeItem(at: temporary) }
            throw error
        }
        for (temporary, final) in staged {
            if rename(temporary.path, final.path) != 0 {
                let code = errno
                for (temporary, _) in staged { try? FileManager.default.removeItem(at: temporary) }
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
        return changed.map(\.name)
    }
}
