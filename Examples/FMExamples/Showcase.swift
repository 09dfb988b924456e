import Foundation
import SwiftFM
import SwiftFMEmulator

/// What SwiftFM is best at, each step printing what happened: a container round trip, a transparent
/// recovery from FileMaker's 952 (injected on the embedded emulator), and paging through a found set.
/// Against a real server it only pages (read-only); the other two need the emulator.
struct Showcase {
    let target: ExampleTarget

    /// Runs every step; returns `true` when each did what it shows.
    func run() async -> Bool {
        say("showcase: what SwiftFM is best at")
        do {
            var ok = true
            if let emulator = target.emulator {
                ok = try await containerRoundTrip() && ok
                ok = try await recoveryFrom952(emulator) && ok
            }
            ok = try await paging() && ok
            return ok
        } catch {
            say("showcase: failed with \(error)")
            return false
        }
    }

    /// Upload bytes into a container field, read the field's streaming URL, download to memory and to a
    /// file (streamed), and compare.
    private func containerRoundTrip() async throws -> Bool {
        let api = DataAPI(configuration: target.configuration)
        let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let edit = try await api.uploadContainer(layout: "Artists", recordId: 1, field: "headshot",
                                                 data: bytes, fileName: "headshot.png", mimeType: "image/png")
        say("showcase: containers: uploaded \(bytes.count) bytes into Artists::headshot of record 1 (modId now \(edit.modId))")
        let record = try await api.getRecord(layout: "Artists", recordId: 1)
        guard let link = (record.first?["fieldData"] as? [String: Any])?["headshot"] as? String,
              let url = URL(string: link) else {
            say("showcase: containers: the field holds no streaming URL")
            return false
        }
        say("showcase: containers: the field reads as a streaming URL, \(url.path)")
        let downloaded = try await api.downloadContainer(url: url)
        let file = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("swiftfm-headshot-\(getpid()).png")
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await api.downloadContainer(url: url, to: file)
        let onDisk = try Data(contentsOf: file)
        let same = downloaded == bytes && onDisk == bytes
        say("showcase: containers: downloaded \(downloaded.count) bytes to memory and \(onDisk.count) to a file: "
            + (same ? "byte-identical" : "DIFFERENT"))
        try await api.logout()
        return same
    }

    /// FileMaker answers 952 (the server forgot the session: a restart, an admin closed it) once; the
    /// client logs in again once and replays the call, and the caller only sees the records.
    private func recoveryFrom952(_ emulator: Emulator) async throws -> Bool {
        let warnings = LogLines()
        let api = DataAPI(configuration: target.configuration,
                          logger: { event in if event.level >= .warning { warnings.append(event.message) } })
        _ = try await api.getRecords(layout: "Artists", limit: 1)
        let loginsBefore = emulator.loginCount
        emulator.inject(.fileMakerError(code: "952", status: 401), count: 1, matching: "/records")
        say("showcase: 952: the server will answer the next record read with 952 (invalid token)")
        let found = try await api.getRecords(layout: "Artists", limit: 3)
        let logins = emulator.loginCount - loginsBefore
        for line in warnings.lines { say("showcase: 952: log: \(line)") }
        say("showcase: 952: the call returned \(found.records.count) records; the client logged in again \(logins) time(s) and replayed it once")
        try await api.logout()
        return logins == 1 && found.records.count == 3
    }

    /// Walk a whole layout page by page: the callback form (`forEachPage`, the next page only after the
    /// handler returns) and the async one (`pages`), both ending at the end of the set without an error.
    private func paging() async throws -> Bool {
        let api = DataAPI(configuration: target.configuration)
        let layout = try await pagingLayout(api)
        let sort = target.writable ? [FMSort("name")] : []
        let (pages, records, code, failure) = await withCheckedContinuation { continuation in
            let counter = LogLines()
            api.forEachPage(layout: layout, pageSize: 2, sort: sort, page: { page in
                let names = page.records.map { Self.label($0) }
                counter.append(names.joined(separator: ", "))
                say("showcase: paging (callbacks): page \(counter.lines.count): \(names.joined(separator: ", "))")
                return counter.lines.count < 10   // stop after 10 pages on a big real table
            }, completion: { count, code in
                continuation.resume(returning: (counter.lines.count, count ?? 0, code, FMError.current))
            })
        }
        if let failure { throw failure }   // a walk that failed (a missing layout: 105) is not the end of the set
        say("showcase: paging (callbacks): \(records) records in \(pages) pages, code \(code): the end of the set is not an error")
        var asyncRecords = 0
        var asyncPages = 0
        for try await page in api.pages(layout: layout, pageSize: 2, sort: sort) {
            asyncPages += 1
            asyncRecords += page.records.count
            if asyncPages == 10 { break }
        }
        say("showcase: paging (async): \(asyncRecords) records in \(asyncPages) pages")
        let none = FMFindRequest(queries: [FMQuery(["name": "==No Such Artist"])])
        var matches = 0
        if target.writable {
            for try await page in api.pages(layout: layout, find: none, pageSize: 2) { matches += page.records.count }
            say("showcase: paging (async): a find that matches nothing is an empty walk (\(matches) records), not a 401")
        }
        try await api.logout()
        return code == "0" && records == asyncRecords && matches == 0
    }

    private func pagingLayout(_ api: DataAPI) async throws -> String {
        if let layout = target.layout { return layout }
        let layouts = try await api.layouts()
        return layouts.flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] }.first ?? "Artists"
    }

    /// A record's `name` field, else its record id.
    private static func label(_ record: [String: Any]) -> String {
        (record["fieldData"] as? [String: Any])?["name"] as? String ?? "record \(record["recordId"] ?? "?")"
    }
}

/// Lines collected from any queue (log events, page labels).
final class LogLines: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); defer { lock.unlock() }; stored.append(line) }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
