import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// `FMConfiguration.parallelDecoding`: off by default, a large answer's records are decoded on one thread (a
/// caller's `init(from:)` never runs concurrently with itself); on, the records are the same, in the same order.
@Suite("Parallel decoding is a switch")
struct ParallelDecodingTests {
    /// The calling thread, as a number.
    static func threadID() -> UInt {
        #if canImport(Darwin)
        UInt(bitPattern: pthread_self())
        #else
        UInt(pthread_self())
        #endif
    }

    /// A record type that notes every thread its `init(from:)` ran on, and how many ran at once.
    struct Watched: Decodable, Equatable, Sendable {
        var id: Int
        var name: String
        static let threads = Locked<Set<UInt>>([])
        static let running = Locked((now: 0, most: 0))

        init(from decoder: any Decoder) throws {
            Self.running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            defer { Self.running.withLock { $0.now -= 1 } }
            Self.threads.withLock { _ = $0.insert(ParallelDecodingTests.threadID()) }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(Int.self, forKey: .id)
            name = try container.decode(String.self, forKey: .name)
        }

        init(id: Int, name: String) {
            self.id = id
            self.name = name
        }

        enum CodingKeys: String, CodingKey { case id, name }

        static func reset() {
            threads.withLock { $0 = [] }
            running.withLock { $0 = (0, 0) }
        }
    }

    /// A found set of `count` records, well over the 1 MiB from which an answer may be read in parts.
    static func body(_ count: Int) -> Data {
        let records = (1...count).map { index in
            #"{"fieldData":{"id":\#(index),"name":"name \#(index) padded with enough text to make the answer large"},"portalData":{},"recordId":"\#(index)","modId":"1"}"#
        }
        return Data(#"{"response":{"dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":\#(count),"foundCount":\#(count),"returnedCount":\#(count)},"data":[\#(records.joined(separator: ","))]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    static let large = body(20_000)

    @Test func offByDefault() {
        let configuration = FMConfiguration(host: "h", database: "d", username: "u", password: "p")
        #expect(configuration.parallelDecoding == false)
        #expect(Harness(configuration: configuration).api.decodingParts == 1)
        var on = configuration
        on.parallelDecoding = true
        #expect(Harness(configuration: on).api.decodingParts == JSONReader.cores)
        #expect(String(describing: on).contains("parallelDecoding: true"))
    }

    /// Serialised with the other test that uses ``Watched``'s counters (the `.serialized` suite below).
    @Suite(.serialized) struct Watching {
        @Test func withTheSwitchOffEveryInitFromRunsOnTheCallsOneThread() async throws {
            #expect(ParallelDecodingTests.large.count > 2 * FileMakerDecoder.splitFrom)
            Watched.reset()
            let h = Harness { request in
                isLogin(request) ? .json(200, Bodies.login()) : .body(200, ParallelDecodingTests.large, contentType: "application/json")
            }
            let set = try await h.api.getRecords(as: Watched.self, layout: "L")
            #expect(set.records.count == 20_000)
            #expect(Watched.threads.value.count == 1, "all on one thread: \(Watched.threads.value.count)")
            #expect(Watched.running.value.most == 1, "never two at once")

            // The callback surface and a page walk too.
            Watched.reset()
            let recorder = Recorder<Int?>()
            h.api.find(as: Watched.self, layout: "L", request: FMFindRequest(["id": "*"])) { set, _ in recorder.record(set?.records.count) }
            #expect(await recorder.value().first == 20_000)
            #expect(Watched.threads.value.count == 1 && Watched.running.value.most == 1)
            Watched.reset()
            var pages = 0
            for try await page in h.api.pages(as: Watched.self, layout: "L", pageSize: 20_000) {
                pages += 1
                #expect(page.records.count == 20_000)
            }
            #expect(pages == 1)
            #expect(Watched.threads.value.count == 1 && Watched.running.value.most == 1)
        }

        /// The decoder itself: with one part (the default), the records are decoded on the calling thread.
        @Test func theDecoderWithOnePartDecodesOnTheCallingThread() throws {
            Watched.reset()
            let caller = ParallelDecodingTests.threadID()
            let set = try FileMakerDecoder().foundSet(Watched.self, body: ParallelDecodingTests.large, status: 200)
            #expect(set.records.count == 20_000)
            #expect(Watched.threads.value == [caller])
            // A found set the caller decodes itself is read on its thread too.
            Watched.reset()
            #expect(try FMTypedFoundSet<Watched>(responseBody: ParallelDecodingTests.large).records.count == 20_000)
            #expect(Watched.threads.value == [caller])
        }
    }

    @Test func withTheSwitchOnTheRecordsAreTheSame() async throws {
        var configuration = FMConfiguration(host: "fms.example.com", database: "D", username: "u", password: "p")
        let answer: StubTransport.Handler = { request in
            isLogin(request) ? .json(200, Bodies.login()) : .body(200, ParallelDecodingTests.large, contentType: "application/json")
        }
        let off = Harness(configuration: configuration, answer)
        configuration.parallelDecoding = true
        let on = Harness(configuration: configuration, answer)
        struct Plain: Decodable, Equatable { var id: Int; var name: String }

        let typedOff = try await off.api.getRecords(as: Plain.self, layout: "L")
        let typedOn = try await on.api.getRecords(as: Plain.self, layout: "L")
        #expect(typedOn.records.count == 20_000)
        #expect(typedOn.records.map(\.fieldData) == typedOff.records.map(\.fieldData))
        #expect(typedOn.records.map(\.recordId) == typedOff.records.map(\.recordId))
        #expect(typedOn.dataInfo?.foundCount == 20_000)

        let rawOff = try await off.api.find(layout: "L", request: FMFindRequest(["id": "*"]))
        let rawOn = try await on.api.find(layout: "L", request: FMFindRequest(["id": "*"]))
        #expect(rawOn.count == 20_000)
        #expect(rawOn.records.map { $0["recordId"] as? String } == rawOff.records.map { $0["recordId"] as? String })
        #expect(NSArray(array: rawOn.records).isEqual(to: rawOff.records))
    }

    /// The endpoint decodes in parts only when asked, and then gives what one part gives.
    @Test func anEndpointDecodesInPartsOnlyWhenAsked() throws {
        struct Plain: Decodable, Equatable { var id: Int; var name: String }
        let endpoint = Endpoints.getRecords(as: Plain.self, layout: "L")
        #expect(endpoint.decodeInParts != nil)
        #expect(Endpoints.createRecord(layout: "L", fieldData: ["a": 1]).decodeInParts == nil)
        let response = Endpoint<FMTypedFoundSet<Plain>>.Response(status: 200, headers: [:], body: Self.large)
        let one = try endpoint.decode(response)
        let four = try endpoint.decoding(parts: 4).decode(response)
        #expect(four.records.map(\.fieldData) == one.records.map(\.fieldData))
    }
}
