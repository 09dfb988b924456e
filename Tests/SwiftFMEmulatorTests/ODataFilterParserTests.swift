import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// The emulator's `$filter` parser: OData's grammar as FileMaker supports it, quote escaping, and
/// hostile input (never a crash or a hang: bounded length and depth, 400/-1002 instead).
@Suite struct ODataFilterParserTests {
    @Test func precedenceAndGrouping() throws {
        let e = try ODataFilter.parse("a eq 1 or b eq 2 and not c eq 3")
        #expect(e == .or(.compare("eq", .field("a"), .literal(.number(1))),
                         .and(.compare("eq", .field("b"), .literal(.number(2))),
                              .not(.compare("eq", .field("c"), .literal(.number(3)))))))
        let grouped = try ODataFilter.parse("(a eq 1 or b eq 2) and c ne null")
        #expect(grouped == .and(.or(.compare("eq", .field("a"), .literal(.number(1))), .compare("eq", .field("b"), .literal(.number(2)))),
                                .compare("ne", .field("c"), .literal(.null))))
        // Operators and function names are case-insensitive (4.01).
        #expect(try ODataFilter.parse("A EQ 1 AND StartsWith(B,'x')")
                == .and(.compare("eq", .field("A"), .literal(.number(1))), .call("startswith", [.field("B"), .literal(.string("x"))])))
    }

    @Test func literals() throws {
        #expect(try ODataFilter.parse("n eq 'O''Brien'") == .compare("eq", .field("n"), .literal(.string("O'Brien"))))
        #expect(try ODataFilter.parse("n eq ''''") == .compare("eq", .field("n"), .literal(.string("'"))))
        #expect(try ODataFilter.parse("n eq 'Zoë 日本'") == .compare("eq", .field("n"), .literal(.string("Zoë 日本"))))
        #expect(try ODataFilter.parse("x lt -2.5e3") == .compare("lt", .field("x"), .literal(.number(FMNumber("-2500")!))))
        #expect(try ODataFilter.parse("d ge 2024-01-02") == .compare("ge", .field("d"), .literal(.date(FMDate(year: 2024, month: 1, day: 2)))))
        #expect(try ODataFilter.parse("t eq 13:45:00") == .compare("eq", .field("t"), .literal(.time(13 * 3600 + 45 * 60))))
        #expect(try ODataFilter.parse("s eq 2024-01-02T13:45:00Z")
                == .compare("eq", .field("s"), .literal(.timestamp(FMDate(year: 2024, month: 1, day: 2), 13 * 3600 + 45 * 60))))
        // An offset is normalised to UTC, across midnight.
        #expect(try ODataFilter.parse("s eq 2024-01-02T00:30:00+01:00")
                == .compare("eq", .field("s"), .literal(.timestamp(FMDate(year: 2024, month: 1, day: 1), 23 * 3600 + 30 * 60))))
        #expect(try ODataFilter.parse("b eq true") == .compare("eq", .field("b"), .literal(.bool(true))))
        #expect(try ODataFilter.parse(#""name with spaces" eq 'J'"#) == .compare("eq", .field("name with spaces"), .literal(.string("J"))))
        #expect(try ODataFilter.parse("FMFID:4294967297 eq 'x'") == .compare("eq", .field("FMFID:4294967297"), .literal(.string("x"))))
        #expect(try ODataFilter.parse("k in ('a','b', 3)") == .isIn(.field("k"), [.literal(.string("a")), .literal(.string("b")), .literal(.number(3))]))
    }

    /// A quote inside a literal can never end it early: whatever a value holds, it stays one literal.
    @Test func injectionStaysInsideTheLiteral() throws {
        for hostile in ["x' or 1 eq 1 or name eq 'y", "') or (1 eq 1", "'; DROP TABLE", "\\'", "a''b", "' eq '"] {
            let escaped = "'" + hostile.replacingOccurrences(of: "'", with: "''") + "'"
            #expect(try ODataFilter.parse("name eq \(escaped)") == .compare("eq", .field("name"), .literal(.string(hostile))))
        }
    }

    @Test func refusesWhatFileMakerRefuses() {
        for bad in ["", "name eq", "eq 1", "name eq 'open", "(a eq 1", "a eq 1)", "isof(a,'Edm.String')", "geo.distance(a,b) lt 1",
                    "Orders/any(o: o/total gt 1)", "a has 1", "a add 1 eq 2", "a eq 1 1", "contains(a)", "a eq 2024-13-01",
                    "a eq 25:00:00", "a eq #", "a eq 1..2", "a eq 1e99999", "not", "a eq ,", "123abc eq 1"] {
            #expect(throws: ODataError.self, "\(bad)") { try ODataFilter.parse(bad) }
        }
        do {
            _ = try ODataFilter.parse("isof(a,'Edm.String')")
        } catch let e as ODataError {
            #expect(e.status == 400 && e.code == "-1002" && e.message.contains("isof"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func hostileInputIsBounded() {
        // Deep nesting: refused by depth, not by a stack overflow.
        for (open, close) in [("(", ")"), ("not (", ")"), ("tolower(", ")")] {
            let deep = String(repeating: open, count: 3000) + "a eq 1" + String(repeating: close, count: 3000)
            #expect(throws: ODataError.self) { try ODataFilter.parse(deep) }
        }
        let nots = String(repeating: "not ", count: 1500) + "a eq 1"
        #expect(throws: ODataError.self) { try ODataFilter.parse(nots) }
        // Too long: refused at once.
        let long = "a eq '" + String(repeating: "x", count: 20_000) + "'"
        #expect(throws: ODataError.self) { try ODataFilter.parse(long) }
        // 64 levels are fine.
        let ok = String(repeating: "(", count: 60) + "a eq 1" + String(repeating: ")", count: 60)
        #expect((try? ODataFilter.parse(ok)) != nil)
    }

    /// Random bytes and random token soups never crash the parser; they parse or throw ODataError.
    @Test func fuzzNeverCrashes() {
        var rng = SplitMix64(seed: 0x0DA7A)
        let pieces = ["a", "eq", "ne", "and", "or", "not", "(", ")", ",", "'", "''", "\"", "contains(", "1", "-", "2024-01-02",
                      "13:00:00", "null", " ", "in", "T", "Z", ":", "ä", "\u{0}", "%", "$", "substring(", "/"]
        for _ in 0..<3000 {
            var s = ""
            for _ in 0..<rng.below(30) { s += pieces[rng.below(pieces.count)] }
            do { _ = try ODataFilter.parse(s) } catch is ODataError {} catch { Issue.record("unexpected error \(error) for \(s)") }
        }
    }
}
