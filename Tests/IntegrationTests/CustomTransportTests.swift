import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import SwiftFM
import SwiftFMEmulator

/// A user's own transport, written against the public `FMTransport` protocol only: it counts requests and
/// adds a header, delegating the network to the default transport.
final class CountingTransport: FMTransport, @unchecked Sendable {
    private let base = FMURLSessionTransport(idleTimeout: 5)
    private let lock = NSLock()
    private var sent: [URLRequest] = []
    var requests: [URLRequest] { lock.withLock { sent } }

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        var tagged = request
        tagged.urlRequest.setValue("custom", forHTTPHeaderField: "X-Transport")
        lock.withLock { sent.append(tagged.urlRequest) }
        return base.send(tagged, events: events)
    }
}

/// A transport that answers in-process, in several body pieces, without any network.
struct CannedTransport: FMTransport {
    struct Task: FMTransportTask { func cancel() {} }
    let body: String

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        let url = request.urlRequest.url ?? URL(fileURLWithPath: "/")
        let response = HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])
        DispatchQueue.global().async {
            guard let response, events.response(response) else { return events.complete(URLError(.cancelled)) }
            let bytes = Data(body.utf8)
            for start in stride(from: 0, to: bytes.count, by: 7) where !events.data(bytes[start..<min(start + 7, bytes.count)]) {
                return events.complete(URLError(.cancelled))
            }
            events.complete(nil)
        }
        return Task()
    }
}

@Suite("Your own transport (public FMTransport)")
struct CustomTransportTests {
    @Test func aWrappingTransportCarriesEveryRequest() async throws {
        let emulator = try Emulator(schemaJSON: integrationSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        let transport = CountingTransport()
        let api = DataAPI(configuration: FMConfiguration(host: url.absoluteString, database: "Integration", username: "admin", password: "admin"),
                          transport: transport)
        let found = try await api.getRecords(layout: "Bands")
        #expect(found.records.count == 4)
        #expect(transport.requests.count == 2)   // the login and the read
        #expect(emulator.requestLog.allSatisfy { $0.header("X-Transport") == "custom" })
    }

    @Test func anInProcessTransportIsEnoughForTheWholeEngine() async throws {
        let body = #"{"response":{"productInfo":{"name":"FileMaker Data API Engine","version":"21.0.1"}},"messages":[{"code":"0","message":"OK"}]}"#
        let api = DataAPI(configuration: FMConfiguration(host: "fms.example.com", database: "D", credentials: nil),
                          transport: CannedTransport(body: body))
        let info = try await api.productInfo()
        #expect(info.version == "21.0.1")
        // The byte cap applies to a custom transport's pieces too.
        var capped = FMConfiguration(host: "fms.example.com", database: "D", credentials: nil)
        capped.maxResponseBytes = 40
        let small = DataAPI(configuration: capped, transport: CannedTransport(body: body))
        let (_, code) = await callback(small) { small.productInfo(completion: $0) }
        #expect(code == FMError.ClientCode.responseTooLarge)
    }
}
