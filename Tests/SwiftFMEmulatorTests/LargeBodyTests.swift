import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// Large request bodies go to a spool file (memory-mapped), container uploads may exceed the
/// body limit, large multipart parts share the body's storage, large responses are written uncopied,
/// and a sort's precomputed keys order exactly as ``FMValue/compare(_:_:)``.
@Suite struct LargeBodyTests {
    static func events(_ pieces: [[UInt8]], limits: HTTPParserLimits) -> [HTTPRequestParser.Event] {
        var parser = HTTPRequestParser(limits: limits)
        var events: [HTTPRequestParser.Event] = []
        for piece in pieces {
            parser.append(piece)
            while let event = parser.next() { events.append(event) }
        }
        return events
    }

    static func body(_ event: HTTPRequestParser.Event?) -> Data? {
        if case let .request(request, _)? = event { return request.body }
        return nil
    }

    static func status(_ event: HTTPRequestParser.Event?) -> Int? {
        if case let .failure(status, _)? = event { return status }
        return nil
    }

    @Test func aSpooledBodyArrivesByteForByteHoweverItIsSplit() {
        let limits = HTTPParserLimits(maxHeaderBytes: 4096, maxBodyBytes: 1 << 20, spoolBodyBytes: 16)
        let payload = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let head = Array("POST /up HTTP/1.1\r\nContent-Length: \(payload.count)\r\n\r\n".utf8)
        let next = Array("GET /after HTTP/1.1\r\n\r\n".utf8)
        let stream = head + payload + next
        for split in [1, head.count, head.count + 1, head.count + 1500, stream.count - next.count, stream.count - 1] {
            let events = Self.events([Array(stream[..<split]), Array(stream[split...])], limits: limits)
            #expect(events.count == 2, "split at \(split)")
            #expect(Self.body(events.first) == Data(payload), "split at \(split)")
            if case let .request(after, _)? = events.last { #expect(after.target == "/after") } else { Issue.record("no second request") }
        }
        // Piece by piece (a few bytes at a time) too, with 100-continue asked before the body.
        let expecting = Array("POST /up HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: \(payload.count)\r\n\r\n".utf8)
        var pieces = [expecting]
        stride(from: 0, to: payload.count, by: 7).forEach { pieces.append(Array(payload[$0..<min($0 + 7, payload.count)])) }
        let events = Self.events(pieces, limits: limits)
        #expect(events.count == 2)
        if case .sendContinue? = events.first {} else { Issue.record("expected 100-continue first") }
        #expect(Self.body(events.last) == Data(payload))
    }

    @Test func uploadsMayExceedTheBodyLimitUpToTheirOwn() {
        let limits = HTTPParserLimits(maxHeaderBytes: 4096, maxBodyBytes: 100, maxUploadBytes: 1000, spoolBodyBytes: 50)
        func request(_ type: String, _ count: Int) -> [UInt8] {
            Array("POST / HTTP/1.1\r\nContent-Type: \(type)\r\nContent-Length: \(count)\r\n\r\n".utf8) + [UInt8](repeating: 0x41, count: count)
        }
        #expect(Self.body(Self.events([request("multipart/form-data; boundary=x", 800)], limits: limits).first)?.count == 800)
        #expect(Self.status(Self.events([request("multipart/form-data; boundary=x", 1001)], limits: limits).first) == 413)
        #expect(Self.status(Self.events([request("application/json", 101)], limits: limits).first) == 413)
        #expect(Self.body(Self.events([request("application/json", 100)], limits: limits).first)?.count == 100)
    }

    @Test func aLargePartSharesTheBodyAndKeepsItsBytes() throws {
        let size = MultipartFormData.sharedPartBytes + 17
        let content = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 9)) })
        var body = Data("--b0\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"big.bin\"\r\n\r\n".utf8)
        let headCount = body.count
        body.append(content)
        body.append(Data("\r\n--b0\r\nContent-Disposition: form-data; name=\"modId\"\r\n\r\n3\r\n--b0--\r\n".utf8))
        // The public parse copies (zero-based parts); the emulator's shares large parts as slices.
        let copied = try MultipartFormData.parse(body: body, boundary: "b0")
        #expect(copied[0].data.startIndex == 0)
        #expect(copied[0].data == content)
        var shared = try MultipartFormData.parse(body: body, boundary: "b0", sharing: true)
        #expect(shared.count == 2)
        #expect(shared[0].data == content)
        #expect(shared[1].data == Data("3".utf8))
        // Value semantics hold both ways.
        shared[0].data[shared[0].data.startIndex] ^= 0xFF
        #expect(copied[0].data == content)
        #expect(body[headCount] == content[0])
        #expect(shared[0].data.first == content[0] ^ 0xFF)
        body = Data()
        #expect(shared[0].data.dropFirst() == content.dropFirst())
    }

    /// A replaced container's bytes are dropped once nothing holds them (a large one's spool file with them),
    /// and kept while a duplicate of the record still shows them.
    @Test func replacedContainerBytesAreDroppedWhenUnused() throws {
        let h = try Harness()
        try h.login()
        let path = "/fmi/data/vLatest/databases/Contacts/layouts/Contacts/records"
        func blobCount() -> Int { h.emulator.core.state.withLock { $0.blobs.count } }
        func bytes(ofRecord id: Int) -> Data {
            let url = h.send("GET", "\(path)/\(id)", contentType: nil).data.first?["fieldData"]?["portrait"]?.stringValue ?? ""
            let target = String(url.dropFirst("http://127.0.0.1:3000".count))
            let cookie = h.send("GET", target, bearer: false, contentType: nil).header("Set-Cookie")?.split(separator: ";").first.map(String.init) ?? ""
            return h.send("GET", target, bearer: false, contentType: nil, headers: [("Cookie", cookie)]).body
        }
        #expect(upload(h, path: "\(path)/1/containers/portrait/1", part: "upload", filename: "a.bin", data: Data("one".utf8)).status == 200)
        #expect(upload(h, path: "\(path)/1/containers/portrait/1", part: "upload", filename: "b.bin", data: Data("two".utf8)).status == 200)
        #expect(blobCount() == 1)
        #expect(bytes(ofRecord: 1) == Data("two".utf8))
        // A duplicate shares the container: replacing the original keeps the shared bytes.
        let copy = h.send("POST", "\(path)/1", body: "{}")
        let copyId = Int(copy.response["recordId"]?.stringValue ?? "") ?? 0
        #expect(copyId > 1)
        #expect(upload(h, path: "\(path)/1/containers/portrait/1", part: "upload", filename: "c.bin", data: Data("three".utf8)).status == 200)
        #expect(blobCount() == 2)
        #expect(bytes(ofRecord: copyId) == Data("two".utf8))
        #expect(bytes(ofRecord: 1) == Data("three".utf8))
    }

    /// A container larger than the spool threshold, the shared-part size and the direct-write size goes
    /// up through the socket server and comes back byte for byte.
    @Test(.enabled(if: socketServerAvailable)) func aLargeContainerRoundTripsOverHTTP() async throws {
        let emulator = try Emulator(schemaJSON: Data(contactsSchemaJSON.utf8))
        try await Emulator.withRunning(emulator) { emu in
            let base = try #require(emu.baseURL)
            let db = base.appendingPathComponent("fmi/data/vLatest/databases/Contacts")
            let session = URLSession(configuration: .ephemeral)
            var login = URLRequest(url: db.appendingPathComponent("sessions"))
            login.httpMethod = "POST"
            login.setValue("Basic \(Data("admin:admin".utf8).base64EncodedString())", forHTTPHeaderField: "Authorization")
            login.setValue("application/json", forHTTPHeaderField: "Content-Type")
            login.httpBody = Data("{}".utf8)
            let (_, loginResponse) = try await session.data(for: login)
            let token = try #require((loginResponse as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-FM-Data-Access-Token"))

            let bytes = Data((0..<(5 * 1024 * 1024 + 3)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ ($0 >> 11)) })
            var body = Data("--big-boundary\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"big.bin\"\r\n\r\n".utf8)
            body.append(bytes)
            body.append(Data("\r\n--big-boundary--\r\n".utf8))
            var up = URLRequest(url: db.appendingPathComponent("layouts/Contacts/records/1/containers/portrait/1"))
            up.httpMethod = "POST"
            up.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            up.setValue("multipart/form-data; boundary=big-boundary", forHTTPHeaderField: "Content-Type")
            up.httpBody = body
            let (_, upResponse) = try await session.data(for: up)
            #expect((upResponse as? HTTPURLResponse)?.statusCode == 200)

            var get = URLRequest(url: db.appendingPathComponent("layouts/Contacts/records/1"))
            get.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            let (record, _) = try await session.data(for: get)
            let urlText = try #require(try JSON.parse(record)["response"]?["data"]?.arrayValue?.first?["fieldData"]?["portrait"]?.stringValue)
            // A URLSession with a cookie store follows the 302 with the streaming cookie.
            let (downloaded, response) = try await URLSession(configuration: .ephemeral).data(from: try #require(URL(string: urlText)))
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(downloaded.count == bytes.count)
            #expect(downloaded == bytes)
        }
    }

    /// The sort's precomputed keys order every pair as `FMValue.compare` does (text folded once per value
    /// instead of per comparison; numbers as doubles only when exact; text in number fields; mixed kinds).
    @Test func sortKeysOrderAsTheValuesCompare() {
        let words = ["", "a", "A", "b", "é", "E", "e\u{301}", "ß", "ss", "Straße", "strasse", "Œuvre", "oeuvre", "Ångström", "angstrom",
                     "zebra", "Zebra", "ZEBRA", "日本", "😀", "ﬁ", "fi", "ı", "İ", "12", "1.5", "-3", "x9", "abc25", "-", ".5", " lead"]
        var rng = SplitMix64(seed: 42)
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        func number() -> FMNumber {
            let texts = ["0", "1", "-1", "2.5", "-2.50", "10", "9.99", "123456789012345", "1234567890123456", "12345678901234567890.5",
                         "-12345678901234567890", "0.000000000000000001", "0.1", "0.10000000000000001", "1e3", "999999999999999.9"]
            return FMNumber(pick(texts)) ?? 0
        }
        func value(_ kind: Int) -> FMValue {
            switch kind {
            case 0: return .empty
            case 1: return .number(number())
            case 2: return .text(pick(words) + (rng.next() % 2 == 0 ? "" : pick(words)))
            case 3: return .date(FMDate(year: 1990 + Int(rng.next() % 5), month: 1 + Int(rng.next() % 12), day: 1 + Int(rng.next() % 28)))
            case 4: return .time(Int(rng.next() % 200_000))
            case 5: return .timestamp(FMDate(year: 2000, month: 1, day: 1 + Int(rng.next() % 3)), Int(rng.next() % 86400))
            default: return .container(ContainerRef(key: "K", filename: pick(words), contentType: "image/png", fileExtension: "png"))
            }
        }
        // Columns as they occur (one field type with text and empties mixed in), and fully mixed ones.
        let columnKinds: [[Int]] = [[0, 2], [0, 1, 2], [1], [0, 3, 2], [4, 0], [5, 2], [6, 0, 2], [0, 1, 2, 3, 4, 5, 6]]
        var mismatches: [String] = []
        for kinds in columnKinds {
            let values = (0..<120).map { _ in value(pick(kinds)) }
            let keys = SortKeys(values)
            for a in values.indices {
                for b in values.indices where keys.compare(a, b) != FMValue.compare(values[a], values[b]) {
                    mismatches.append("\(values[a]) vs \(values[b])")
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }
}
