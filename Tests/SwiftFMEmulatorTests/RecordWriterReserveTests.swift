import Foundation
import Testing
@testable import SwiftFMEmulator

/// ``RecordWriter`` sizes its buffer once from the first record: it must not reserve the first record's size
/// for every record. Before, a first record far larger than the others reserved its size times the number of
/// records, and a quarter more: one 3 MB text among 10,000 records asked for 37.5 GB, and `fm-emulator`
/// died of the failed allocation ("failed to allocate 37500910096 bytes") on one `GET …/records?_limit=10000`.
@Suite struct RecordWriterReserveTests {
    /// The demo solution with one 2 MB artist first and 40 small ones after it.
    func state() throws -> (EmulatorState, big: Int, long: Int) {
        let emulator = Emulator()
        let long = String(repeating: "x", count: 2_000_000)
        let big = try emulator.addRecord(toTable: "Artists", ["name": long])
        for index in 0..<40 { _ = try emulator.addRecord(toTable: "Artists", ["name": "small \(index)"]) }
        return (emulator.core.state.withLock { $0 }, big, long.utf8.count)
    }

    /// `Artist List` has neither portals nor related fields (the flat plan); `Artists` has a portal (the general writer).
    @Test(arguments: ["Artist List", "Artists"]) func aLargeFirstRecordDoesNotSizeTheBufferForEveryRecord(layout: String) throws {
        let (s, big, long) = try state()
        let table = try #require(s.table("Artists"))
        let schemaLayout = try #require(s.layout(layout))
        let records = ([big] + table.order.filter { $0 != big }).compactMap { table.records[$0] }
        #expect(records.count == 46)
        let options = OutputOptions(layout: schemaLayout, portals: schemaLayout.portals, ranges: [:], dateformats: 0)
        let ctx = RequestContext(request: HTTPRequest(method: "GET", target: "/"), path: [], version: "vLatest", query: [], now: Date())
        let bytes = try RecordWriter(state: s, options: options, ctx: ctx).writeArray(records)
        #expect(bytes.count > long && bytes.count < long + 100_000)
        // Growing by doubling, the buffer ends below twice what it holds; a reservation may add at most 16 MiB
        // (`RecordWriter.reserveLimit`; on main: 2 MB × 57 rows' worth, over 110 MB).
        #expect(bytes.capacity <= max(2 * bytes.count, bytes.count + (16 << 20)),
                "\(bytes.capacity) bytes reserved for \(bytes.count) written")
    }
}
