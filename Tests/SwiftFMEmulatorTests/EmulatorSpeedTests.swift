import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// Emulator speed: the fast paths must answer exactly what the plain ones did.
@Suite struct EmulatorSpeedTests {
    /// The number formatting the emulator used before the fast writer (the oracle).
    static func referenceFormat(_ n: Double) -> String {
        guard n.isFinite else { return "0" }
        if n == 0 { return "0" }
        if n == n.rounded(), abs(n) < 9e18 { return String(Int64(n)) }
        return JSON.plainDecimal(n.description)
    }

    @Test func numberWritingMatchesTheReference() {
        var values: [Double] = [0, -0.0, 1, -1, 9, 10, -10, 99, 100, 0.1, -0.1, 0.5, 1.5, 3.25, 1e-5, 1.5e-7, 123.456, 1e15, 1e16,
                                1e21, 1.5e20, -2.5e-9, 8.999_999_999_999_999e18, 9e18, 9.1e18, 12_345_678_901_234_567_168,
                                Double(Int64.max), -Double(Int64.max), .pi, -.pi, .ulpOfOne, .leastNonzeroMagnitude,
                                .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan,
                                4_503_599_627_370_496.5, 0.000_1, 0.000_099_99]
        var rng = SplitMix64(seed: 9)
        for _ in 0..<5_000 {
            let bits = rng.next()
            values.append(Double(bitPattern: bits))
            values.append(Double(Int64(bitPattern: bits) >> Int(bits % 60)))
            values.append(Double(Int64(bitPattern: bits) % 1_000_000) / 100)
        }
        var mismatches: [String] = []
        for v in values {
            var out: [UInt8] = []
            JSON.writeNumber(v, into: &out)
            let fast = String(decoding: out, as: UTF8.self)
            if fast != Self.referenceFormat(v) || JSON.format(number: v) != fast { mismatches.append("\(v): \(fast)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    @Test func integersAndPaddingWrite() {
        for n: Int64 in [0, 7, 10, -1, -10, 1234567890, .max, .min + 1, .min] {
            var out: [UInt8] = []
            JSON.writeInteger(n, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(n))
        }
        for (n, width) in [(0, 2), (5, 2), (12, 2), (123, 2), (7, 4), (2024, 4), (12345, 4), (-5, 4)] {
            var out: [UInt8] = []
            RecordWriter.writePadded(n, width, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == pad(n, width))
        }
        for t in [0, 59, 3600, 86399, 90061, 360_000_000, -61] {
            var out: [UInt8] = []
            RecordWriter.writeTime(t, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == FMValue.formatTime(t))
        }
    }

    /// `!` counts each value once per find (it was quadratic): the right records at a size where the
    /// old way took seconds.
    @Test func duplicatesFindOverThousandsOfRecords() throws {
        let h = try Harness()
        try h.login()
        let emulator = h.emulator
        for i in 0..<1000 {
            // Names "N0" … "N499" twice each, plus one unique name.
            try emulator.addRecord(toTable: "Contacts", ["name": "N\(i % 500)", "drink": i == 0 ? "Juice" : "x"])
        }
        try emulator.addRecord(toTable: "Contacts", ["name": "Unique"])
        let a = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"!"}],"limit":5000}"#)
        #expect(a.status == 200)
        // The four seed records have distinct names; the 1000 added ones are pairs.
        #expect(a.response["dataInfo"]?["foundCount"]?.numberValue == 1000)
        #expect(a.data.count == 1000)
        let mixed = h.send("POST", "\(h.base)/layouts/Contacts/_find", body: #"{"query":[{"name":"!"},{"drink":"Juice","omit":"true"}],"limit":5000}"#)
        #expect(mixed.response["dataInfo"]?["foundCount"]?.numberValue == 999)
    }

    /// A found set is sorted and written from a snapshot after the state lock is released: changes
    /// made in between do not show, and the lock is free while the body is written.
    @Test func foundSetBodyIsWrittenFromASnapshotOutsideTheLock() throws {
        let h = try Harness()
        try h.login()
        let request = HTTPRequest(method: "POST", target: "\(h.base)/layouts/Contacts/_find",
                                  headers: [("Host", "127.0.0.1:3000"), ("Authorization", "Bearer \(h.token)"),
                                            ("Content-Type", "application/json")],
                                  body: Data(#"{"query":[{"name":"J*"}],"sort":[{"fieldName":"name","sortOrder":"descend"}]}"#.utf8))
        let core = h.emulator.core
        let staged = core.state.withLock { $0.routeStaged(request, now: Date()) }
        #expect(staged.pendingBody != nil)
        #expect(staged.response.status == 200)
        // The lock is free: another client's write goes through before the body is written.
        try h.emulator.addRecord(toTable: "Contacts", ["name": "Jane Later"])
        let body = staged.finished().body
        let json = try JSON.parse(body)
        let names = json["response"]?["data"]?.arrayValue?.compactMap { $0["fieldData"]?["name"]?.stringValue }
        #expect(names == ["John Smith", "John Doe", "Joe Example"])
        // The same request now sees the new record.
        let again = h.send("POST", "\(h.base)/layouts/Contacts/_find",
                           body: #"{"query":[{"name":"J*"}],"sort":[{"fieldName":"name","sortOrder":"descend"}]}"#)
        #expect(again.data.compactMap { $0["fieldData"]?["name"]?.stringValue } == ["John Smith", "John Doe", "Joe Example", "Jane Later"])
    }
}

