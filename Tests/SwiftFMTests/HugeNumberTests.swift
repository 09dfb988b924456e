import Foundation
import Testing
@testable import SwiftFM

/// A number too large for `Int` in an answer is unreadable, never wrapped (`NSNumber.intValue`) into a
/// nonsense value (`Int.min`, `0`, a neighbouring integer).
@Suite("Huge numbers in answers")
struct HugeNumberTests {
    static let hostile = ["1e300", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "3.5", "-1e20"]

    /// The raw found-set path reads `dataInfo` counts; a count that is not an exact `Int` is the server's unusable
    /// answer (`-1007`, as the typed and `Decodable` readings say), never a wrapped value such as `Int.min` — nor `0`,
    /// a set of no records (see `DataInfoCountsAreIntegersTests`).
    @Test(arguments: hostile)
    func dataInfoCountsAreNeverWrapped(number: String) throws {
        let body = #"{"response":{"data":[],"dataInfo":{"foundCount":\#(number),"returnedCount":\#(number),"totalRecordCount":\#(number)}},"messages":[{"code":"0","message":"OK"}]}"#
        #expect(throws: FMError.self) { try FMFoundSet(parsing: Data(body.utf8), status: 200) }
        do {
            _ = try FMFoundSet(parsing: Data(body.utf8), status: 200)
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse)
        }
    }

    /// Exact integers, including ones beyond 2^53, keep their value.
    @Test func exactIntegersAreRead() throws {
        let body = #"{"response":{"data":[],"dataInfo":{"foundCount":9007199254740993,"returnedCount":"12","totalRecordCount":7.0}},"messages":[{"code":"0","message":"OK"}]}"#
        let info = try #require(try FMFoundSet(parsing: Data(body.utf8), status: 200).dataInfo)
        #expect(info.foundCount == 9_007_199_254_740_993)
        #expect(info.returnedCount == 12)
        #expect(info.totalRecordCount == 7)
    }

    /// A numeric `messages[0].code` that is not an exact `Int` is a malformed answer, not a made-up code
    /// (`-9223372036854775809` never becomes `"-9223372036854775808"`).
    @Test(arguments: hostile)
    func numericCodesAreNeverRounded(number: String) {
        let body = #"{"messages":[{"code":\#(number),"message":"x"}],"response":{}}"#
        let error = Envelope.error(status: 500, body: Data(body.utf8))
        #expect(error.code == FMError.ClientCode.malformedResponse)
    }

    @Test func exactNumericCodesAreKept() {
        let body = #"{"messages":[{"code":952,"message":"x"}],"response":{}}"#
        #expect(Envelope.error(status: 401, body: Data(body.utf8)).code == "952")
    }
}
