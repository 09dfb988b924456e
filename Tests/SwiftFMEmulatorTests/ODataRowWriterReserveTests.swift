import Foundation
import Testing
@testable import SwiftFMEmulator

/// ``ODataRowWriter`` sizes its buffer once from the first row: it must not reserve the first row's size for
/// every row. Before, a first row far larger than the others (one long text, a container) reserved its size
/// times the number of rows, and a few more: 10 MB × 100 000 rows asked for over a terabyte (a trap, the
/// emulator gone); here a 200 KB row among small ones reserved megabytes for a page of a few hundred kilobytes.
@Suite struct ODataRowWriterReserveTests {
    @Test func aLargeFirstRowDoesNotSizeTheBufferForEveryRow() throws {
        let c = try ODataClient()
        let long = String(repeating: "x", count: 200_000)
        let answer = c.send("POST", "/Shop/Customers", body: #"{"code":"big","name":"\#(long)"}"#)
        #expect(answer.status == 201, "\(answer.text.prefix(200))")
        for index in 0..<40 {
            #expect(c.send("POST", "/Shop/Customers", body: #"{"code":"s\#(index)","name":"small"}"#).status == 201)
        }
        let s = c.emulator.core.state.withLock { $0 }
        let set = try #require(s.odataSet("Customers"))
        let table = try #require(s.table(set.table))
        let big = try #require(table.order.first { table.records[$0]?.values["code"]?.first == .text("big") })
        var ctx = ODataContext(request: HTTPRequest(method: "GET", target: "/", headers: [("Host", "127.0.0.1:3000")]), now: Date())
        ctx.origin = "http://127.0.0.1:3000"
        ctx.dbSegment = "Shop"
        let columns = try s.odataColumns(set, select: "code,name", ctx: ctx)
        let ids = [big] + table.order.filter { $0 != big }
        let bytes = try ODataRowWriter(state: s, set: set, columns: columns, expand: [], ctx: ctx, depth: 0).writeArray(ids[...], table: table)
        #expect(bytes.count > long.utf8.count && bytes.count < long.utf8.count + 100_000)
        // Growing by doubling, the buffer ends below twice what it holds; a reservation may add at most 1 MiB.
        #expect(bytes.capacity <= max(2 * bytes.count, bytes.count + (1 << 20)),
                "\(bytes.capacity) bytes reserved for \(bytes.count) written")
    }
}
