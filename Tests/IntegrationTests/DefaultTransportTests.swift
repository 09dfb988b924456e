import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// The default transport (on Linux, for the emulator's `http://` URL: `FMCurlTransport` where libcurl loads)
/// decodes a gzip answer from fm-emulator, through the async and the callback surfaces.
@Suite("Default transport against the emulator")
struct DefaultTransportTests {
    @Test func aGzipAnswerIsDecoded() async throws {
        try await withClient { api, emulator in
            emulator.inject(.gzip, count: 2, matching: "/records")
            let records = try await api.getRecords(layout: "Bands", limit: 2)
            #expect(records.count == 2)
            let (found, code) = await callback(api) { api.getRecords(layout: "Bands", limit: 3, completion: $0) }
            #expect(code == "0")
            #expect(found?.count == 3)
        }
    }
}
