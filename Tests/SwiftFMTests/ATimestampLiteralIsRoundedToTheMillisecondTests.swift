import Foundation
import Testing
@testable import SwiftFM

// A timestamp in a filter is written in UTC to the millisecond, rounded to the nearest one: a time within half a
// millisecond of the next second is that second (the carry goes on to the minute, the day, the year), never the
// second before it. Written earlier, `gt` would take in records of the second it already covered and `lt` miss them.
@Suite("OData filters: a timestamp literal is rounded to the millisecond")
struct ATimestampLiteralIsRoundedToTheMillisecondTests {
    /// Failed on main: the first three were written a whole second early (`…:20Z`, `…:59Z`, `2023-12-31T23:59:59Z`).
    @Test(arguments: [
        (1_700_000_000.9996, "2023-11-14T22:13:21Z"),
        (1_700_000_039.99951, "2023-11-14T22:14:00Z"),
        (1_704_067_199.9999, "2024-01-01T00:00:00Z"),
        (1_700_000_000.1234, "2023-11-14T22:13:20.123Z"),
        (1_700_000_000.9994, "2023-11-14T22:13:20.999Z"),
        (1_700_000_000, "2023-11-14T22:13:20Z"),
        (-0.5, "1969-12-31T23:59:59.500Z"),
        (-0.0004, "1970-01-01T00:00:00Z"),
    ])
    func roundedToTheNearestMillisecond(seconds: TimeInterval, literal: String) {
        #expect(FMODataValue.timestamp(Date(timeIntervalSince1970: seconds)).description == literal)
    }

    /// Out of range or not finite stays -1002, whatever the rounding.
    @Test func outOfRangeStaysRefused() {
        #expect(FMODataValue.timestamp(Date(timeIntervalSince1970: .infinity)).description.hasPrefix("<invalid"))
        #expect(FMODataValue.timestamp(Date(timeIntervalSince1970: 1e15)).description.hasPrefix("<invalid"))
    }
}
