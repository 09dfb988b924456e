// Contract: `$filter` serves the date and time functions of FileMaker's advertised `FilterFunctions`
// list (the 22.0.2 `$metadata`, ODATA.md §3.3; Docs/FILEMAKER-BEHAVIOUR.md "`$filter`"): `now()` on the
// emulator's clock, `date()`, `time()`, `mindatetime()`, `maxdatetime()` and `totaloffsetminutes()`
// (0: the store keeps UTC), and `$metadata` advertises them. A call with the wrong number of arguments is refused
// (400).
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct ODataFilterDateTimeFunctionRuleTests {
    func codes(_ c: ODataClient, _ filter: String) -> [String] {
        let a = c.send("GET", "/Shop/Customers?$filter=" + percentEncoded(filter))
        #expect(a.status == 200, "\(filter): \(a.text)")
        return a.rows.compactMap { $0["code"]?.stringValue }
    }

    @Test func nowIsTheEmulatorsClock() throws {
        let c = try ODataClient()
        // ALFKI was seen 2024-11-02T20:15:00Z; the others never.
        #expect(codes(c, "seen lt now()") == ["ALFKI"])
        // Back to 2024-01-01T00:00:00Z on the emulator's clock: seen is in its future.
        let target = Date(timeIntervalSince1970: 1_704_067_200)
        c.emulator.advanceClock(by: target.timeIntervalSinceNow)
        #expect(codes(c, "seen lt now()") == [])
        #expect(codes(c, "seen gt now()") == ["ALFKI"])
    }

    @Test func dateAndTimeOfATimestamp() throws {
        let c = try ODataClient()
        #expect(codes(c, "date(seen) eq 2024-11-02") == ["ALFKI"])
        #expect(codes(c, "time(seen) eq 20:15:00") == ["ALFKI"])
        #expect(codes(c, "time(seen) lt 20:00:00") == [])
        #expect(codes(c, "date(joined) eq 2021-06-01") == ["OBR"])
    }

    @Test func minAndMaxDateTime() throws {
        let c = try ODataClient()
        #expect(codes(c, "seen gt mindatetime()") == ["ALFKI"])
        #expect(codes(c, "seen lt maxdatetime()") == ["ALFKI"])
        #expect(codes(c, "totaloffsetminutes(seen) eq 0") == ["ALFKI"])
    }

    @Test func metadataAdvertisesThem() throws {
        let c = try ODataClient()
        let xml = c.send("GET", "/Shop/$metadata").text
        for name in ["now", "date", "time", "mindatetime", "maxdatetime", "totaloffsetminutes"] {
            #expect(xml.contains("<String>\(name)</String>"), "\(name)")
        }
    }

    @Test func theWrongNumberOfArgumentsIsRefused() throws {
        let c = try ODataClient()
        for filter in ["seen lt now(1)", "date() eq 2024-11-02", "date(seen, seen) eq 2024-11-02", "time() eq 20:15:00",
                       "seen gt mindatetime(seen)", "totaloffsetminutes() eq 0"] {
            let a = c.send("GET", "/Shop/Customers?$filter=" + percentEncoded(filter))
            #expect(a.status == 400, "\(filter): \(a.text)")
        }
    }
}
