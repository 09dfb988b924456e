import Foundation
import Testing
import TestSupport

// What the compiler says about completions formed in main-actor code: the call sites below are type-checked
// with the toolchain's `swiftc` against the SwiftFM module this test run was built with.
//
// Swift 6 mode: main-actor state inside a completion is refused, with the compiler's diagnostic naming the
// property and the nonisolated context (the porting guide says what to write instead); the shapes the README and
// the porting guide show compile without a warning. Swift 5 mode: top-level code of the legacy eras compiles
// unchanged. (On main, the refused code compiled without a warning and trapped at run time.)

/// Type-checks `source` as a `main.swift` in the given language mode; returns the exit status and the diagnostics.
private func typecheck(_ source: String, swiftVersion: String) throws -> (status: Int32, diagnostics: String) {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-typecheck-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("main.swift")
    try Data(source.utf8).write(to: file)
    let result = try typecheckAgainstSwiftFM([file], arguments: ["-swift-version", swiftVersion], scratch: directory)
    return (result.status, result.diagnostics)
}

/// Main-actor code whose completions touch main-actor state: a `@MainActor` class and top-level code.
private let mainActorStateInCompletions = """
    import Foundation
    import SwiftFM

    @MainActor final class Model {
        var names: [String] = []
        func load(_ api: DataAPI) {
            api.getRecords(layout: "Artists") { found, code in
                self.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            }
        }
    }

    var total = 0
    let api = DataAPI(host: "fms.example.com", database: "Music", username: "admin", password: "secret")
    api.getRecords(layout: "Artists") { found, code in
        total = found?.records.count ?? 0
    }
    """

/// The same, written as the README and the porting guide say.
private let mainActorStateHandedBack = """
    import Foundation
    import SwiftFM

    @MainActor final class Model {
        var names: [String] = []
        func load(_ api: DataAPI) {
            api.getRecords(layout: "Artists") { found, code in
                let names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
                Task { @MainActor in self.names = names }
            }
        }
        func load(token: String) {
            DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { records, code in
                let names = records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
                DispatchQueue.main.async { self.names = names }
            }
        }
    }

    let api = DataAPI(host: "fms.example.com", database: "Music", username: "admin", password: "secret")
    let done = DispatchSemaphore(value: 0)
    api.getRecords(layout: "Artists") { found, code in
        print(found?.records.map { $0.count } ?? [], code)
        done.signal()
    }
    done.wait()
    """

/// Top-level code of the completion-handler era (no concurrency annotations), as a Swift 5 mode tool has it.
private let legacyTopLevel = """
    import Foundation
    import SwiftFM

    final class Daemon {
        var names: [String] = []
        func run(token: String) {
            DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { records, code in
                for record in records { self.names.append("\\(record["recordId"] ?? "")") }
            }
        }
    }

    var total = 0
    let done = DispatchSemaphore(value: 0)
    let api = DataAPI(host: "fms.example.com", database: "Music", username: "admin", password: "secret")
    api.getRecords(layout: "Artists") { found, code in
        total = found?.records.map { $0.count }.count ?? 0
        done.signal()
    }
    done.wait()
    func count() -> Int {
        var n = 0
        let signal = DispatchSemaphore(value: 0)
        api.getRecords(layout: "Artists") { found, _ in n = found?.records.count ?? 0; signal.signal() }
        signal.wait()
        return n
    }
    """

/// Completions marked `@MainActor` in main-actor code: each call picks its main-actor twin (instance, typed,
/// paging, legacy static of every era, SwiftFM 2.x, FMOData), and a `@MainActor` method passes as a completion.
private let mainActorMarkedCompletions = """
    import Foundation
    import SwiftFM

    @MainActor final class Model {
        var names: [String] = []
        var pages = 0
        func received(_ found: FMFoundSet?, _ code: String) { names = [code] }
        func load(_ api: DataAPI, _ odata: FMOData, token: String) {
            api.getRecords(layout: "Artists") { @MainActor found, code in
                self.names = found?.records.compactMap { $0.field("name", as: String.self) } ?? []
            }
            api.getRecords(layout: "Artists", completion: received)
            let request = api.getRecord(layout: "Artists", recordId: 1) { @MainActor found, _ in self.pages = found?.records.count ?? 0 }
            request.cancel()
            api.forEachPage(layout: "Artists", page: { @MainActor page in self.pages += 1; return true },
                            completion: { @MainActor count, code in self.names.append(code) })
            api.shutdown { @MainActor in self.names = [] }
            DataAPI.refreshToken(for: "YWRtaW46YWRtaW4=") { @MainActor token, expiry in self.names = [token] }
            DataAPI.getRecords(token: token, layout: "Artists", limit: 20) { @MainActor records, code in
                self.names = records?.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String } ?? []
            }
            DataAPI.validateSession(token: token) { @MainActor valid, code in self.names = [code] }
            SwiftFM.deleteSession(token: token) { @MainActor closed in self.pages = closed ? 1 : 0 }
            odata.records(from: "Artists") { @MainActor page, code in self.names = [code] }
            odata.forEachPage(from: "Artists", page: { @MainActor page in self.pages += 1; return true },
                              completion: { @MainActor rows, code in self.names = [code] })
        }
    }

    var total = 0
    let api = DataAPI(host: "fms.example.com", database: "Music", username: "admin", password: "secret")
    api.getRecords(layout: "Artists") { @MainActor found, code in
        total = found?.records.map { $0.count }.count ?? 0
    }
    FMOData(sharing: api).count(of: "Artists") { @MainActor count, code in total = count ?? 0 }
    """

/// A walk with only one of its two closures marked: neither overload takes both, so it does not compile.
private let halfMarkedWalk = """
    import Foundation
    import SwiftFM

    @MainActor final class Model {
        var pages = 0
        func load(_ api: DataAPI) {
            api.forEachPage(layout: "Artists", page: { @MainActor page in self.pages += 1; return true },
                            completion: { count, code in print(code) })
        }
    }
    """

@Suite("Completions formed on the main actor: what compiles")
struct CompletionIsolationCompileTests {
    @Test func swift6RefusesMainActorStateInACompletion() throws {
        let (status, diagnostics) = try typecheck(mainActorStateInCompletions, swiftVersion: "6")
        #expect(status != 0)
        #expect(diagnostics.contains("error: main actor-isolated property 'names' can not be mutated from a nonisolated context"),
                "\(diagnostics)")
        #expect(diagnostics.contains("error: main actor-isolated var 'total' can not be mutated from a nonisolated context"),
                "\(diagnostics)")
    }

    @Test func swift6AcceptsTheHandBackAndTheSemaphorePattern() throws {
        let (status, diagnostics) = try typecheck(mainActorStateHandedBack, swiftVersion: "6")
        #expect(status == 0, "\(diagnostics)")
        #expect(!diagnostics.contains("warning:"), "\(diagnostics)")
    }

    @Test func swift5ModeLegacyTopLevelCodeCompilesUnchanged() throws {
        let (status, diagnostics) = try typecheck(legacyTopLevel, swiftVersion: "5")
        #expect(status == 0, "\(diagnostics)")
        #expect(!diagnostics.contains("warning:"), "\(diagnostics)")
    }

    @Test func swift6MainActorMarkedCompletionsCompileAndPickTheMainActorTwins() throws {
        let (status, diagnostics) = try typecheck(mainActorMarkedCompletions, swiftVersion: "6")
        #expect(status == 0, "\(diagnostics)")
        #expect(!diagnostics.contains("warning:"), "\(diagnostics)")
    }

    @Test func swift5ModeMainActorMarkedCompletionsCompileToo() throws {
        let (status, diagnostics) = try typecheck(mainActorMarkedCompletions, swiftVersion: "5")
        #expect(status == 0, "\(diagnostics)")
        #expect(!diagnostics.contains("warning:"), "\(diagnostics)")
    }

    @Test func aWalkWithOnlyOneClosureMarkedDoesNotCompile() throws {
        let (status, diagnostics) = try typecheck(halfMarkedWalk, swiftVersion: "6")
        #expect(status != 0)
        #expect(diagnostics.contains("error: ambiguous use of 'forEachPage(layout:"), "\(diagnostics)")
    }
}
