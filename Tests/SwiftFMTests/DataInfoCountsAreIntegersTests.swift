import Foundation
import Testing
@testable import SwiftFM

// The contract: a `dataInfo` or `portalDataInfo` count (`totalRecordCount`, `foundCount`, `returnedCount`) is a whole
// number (a JSON number, or its digits as text). One that is present but is not (a fraction, a number beyond `Int`,
// words, a boolean, an array) is the server's unusable answer: every found-set read, raw and typed, callback and async,
// and a page walk, fails with `-1007` naming the count, as `FMDataInfo`'s own `Decodable` reading does. It is never
// read as 0 (a set of no records) and handed out. An absent or `null` count stays 0.

@Suite("dataInfo counts are integers")
struct DataInfoCountsAreIntegersTests {
    struct Row: Decodable, Sendable { var name: String }

    static let notIntegers = [#"1.5"#, #""abc""#, #"1e300"#, #"9223372036854775808"#, #"true"#, #"[1]"#]

    static func body(count: String, value: String) -> String {
        let page = ServerValuesAttackTests.page(ids: [1], found: 1)
        return page.replacingOccurrences(of: #""\#(count)":1"#, with: #""\#(count)":\#(value)"#)
    }

    /// Before the fix `"foundCount": 1.5` (or text, or 2^63) was read as 0: `getRecords` handed out a found set of one
    /// record whose `dataInfo` said the set held none, and a page walk failed with "past its own foundCount 0".
    @Test(arguments: ["totalRecordCount", "foundCount", "returnedCount"], notIntegers)
    func aCountThatIsNotAnIntegerIsMalformed(count: String, value: String) async {
        let body = Self.body(count: count, value: value)
        #expect(body.contains(#""\#(count)":\#(value)"#))
        let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, body) }
        var codes: [String?] = []
        do { _ = try await h.api.getRecords(layout: "L"); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try await h.api.getRecords(as: Row.self, layout: "L"); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        let raw = Recorder<String>()
        h.api.getRecords(layout: "L") { _, code in raw.record(code) }
        codes += await raw.value().map { $0 }
        do { _ = try FMFoundSet(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try FMTypedFoundSet<Row>(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        #expect(codes == Array(repeating: FMError.ClientCode.malformedResponse, count: 5), "\(count) \(value)")
        do {
            _ = try FMFoundSet(responseBody: Data(body.utf8))
        } catch {
            #expect((error as? FMError)?.message.contains("dataInfo.\(count)") == true, "\(error)")
        }
    }

    /// The same for a record's `portalDataInfo`.
    @Test(arguments: ["foundCount", "returnedCount"], notIntegers)
    func aPortalCountThatIsNotAnIntegerIsMalformed(count: String, value: String) async {
        let info = #"{"portalObjectName":"p","database":"D","table":"T","foundCount":1,"returnedCount":1}"#
            .replacingOccurrences(of: #""\#(count)":1"#, with: #""\#(count)":\#(value)"#)
        let body = #"{"response":{"data":[{"fieldData":{"name":"n"},"portalData":{"p":[]},"recordId":"1","modId":"1","portalDataInfo":[\#(info)]}],"#
            + #""dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1}},"#
            + #""messages":[{"code":"0","message":"OK"}]}"#
        var codes: [String?] = []
        do { _ = try FMTypedFoundSet<Row>(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try JSONDecoder().decode(FMPortalDataInfo.self, from: Data(info.utf8)); codes.append(nil) } catch {
            codes.append(error is DecodingError ? FMError.ClientCode.malformedResponse : "\(error)")
        }
        #expect(codes == Array(repeating: FMError.ClientCode.malformedResponse, count: 2), "\(count) \(value)")
    }

    /// Guard: an absent or `null` count, an integral `1.0` and digits as text stay readable.
    @Test(arguments: [#"null"#, #"1.0"#, #""1""#, nil] as [String?])
    func absentNullAndTextCountsStayReadable(value: String?) async throws {
        var body = Self.body(count: "foundCount", value: value ?? "1")
        if value == nil { body = body.replacingOccurrences(of: #""foundCount":1,"#, with: "") }
        let set = try FMFoundSet(responseBody: Data(body.utf8))
        #expect(set.dataInfo?.foundCount == (value == "null" || value == nil ? 0 : 1))
        _ = try FMTypedFoundSet<Row>(responseBody: Data(body.utf8))
    }
}
