import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The request SwiftFM builds and sends, attacked (review of the one-assignment headers and the transports' line check).
///
/// The contract:
/// - A header value that comes from a caller — a MIME type (it becomes `Content-Type`), a cookie, a token, encoded
///   credentials — holding a control character (CR, LF, NUL, DEL, …) fails the call with `-1002` before anything is
///   sent, over every shipped transport; it is never sent cut short (libcurl stops a field at NUL), with a raw control
///   byte, nor reported as a connection failure (`-1003`, which is retried).
/// - A field that would add a line never reaches the wire; ``FMURLSessionTransport``'s refusal completes exactly once,
///   never with a head, and its task's `cancel()` is harmless.
/// - Every kind of request SwiftFM sends goes out with each field once: one `Authorization` (where the call has
///   one), one `Content-Type` (where it has a body), no `Expect`, and its own fields (a data source's login, the
///   container hop's `Cookie`, OData's versions) unchanged.
@Suite("Request headers under attack (loopback)")
struct RequestHeadersAttackTests {
    enum Front: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case curl, urlSession
        var testDescription: String { rawValue }
        func transport() -> any FMTransport {
            switch self {
            case .curl: FMCurlTransport(idleTimeout: 20)
            case .urlSession: FMURLSessionTransport(idleTimeout: 20)
            }
        }
    }

    /// MIME types a caller may pass that no header may carry.
    static let controlMIMETypes = ["text/plain\r\nX-Injected: 1", "text/plain\nX-Injected: 1", "text/plain\u{0}X-Injected: 1",
                                   "text/plain\u{1}", "text/plain\u{7F}"]

    static func odata(_ server: TestServer, _ front: Front) -> FMOData {
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        configuration.retry = .standard
        return FMOData(sharing: DataAPI(configuration: configuration, transport: front.transport()))
    }

    /// A fresh directory holding `note.txt` ("hello"), for the uploads from a file; the caller removes the directory.
    static func noteFile() throws -> (directory: URL, file: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("RequestHeadersAttack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("note.txt")
        try Data("hello".utf8).write(to: file)
        return (directory, file)
    }

    /// An OData container upload's `mimeType` is its `Content-Type`. Before, it was not checked: CR or LF made the
    /// transport refuse it as a connection failure (`-1003`, `URLError(-1000 badURL)`), NUL sent the field cut short
    /// through libcurl (`Content-Type: text/plain`), another control byte went out as given.
    @Test(arguments: Front.allCases, controlMIMETypes)
    func anODataUploadsMIMETypeWithAControlCharacterIsRefused(_ front: Front, _ mimeType: String) async throws {
        let server = TestServer(respond: { _ in TestServer.http("204 No Content") })
        defer { server.stop() }
        let odata = Self.odata(server, front)
        let (directory, file) = try Self.noteFile()
        defer { try? FileManager.default.removeItem(at: directory) }

        for source in ["data", "file"] {
            do {
                if source == "data" {
                    _ = try await odata.uploadContainer(in: "Notes", key: 1, field: "doc", data: Data("hello".utf8), fileName: "note.txt",
                                                        mimeType: mimeType)
                } else {
                    _ = try await odata.uploadContainer(in: "Notes", key: 1, field: "doc", fileURL: file, mimeType: mimeType)
                }
                Issue.record("\(source): the upload was sent: \(server.heads)")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.invalidArgument, "\(source): \(error)")
            }
        }
        #expect(server.heads.isEmpty, "\(server.heads)")
    }

    /// An empty `mimeType` is no MIME type, as for the Data API's upload: the type is inferred. Before, OData sent it as
    /// given: libcurl then sent no `Content-Type` at all (`Content-Type:` removes a field) and URLSession an empty one.
    @Test(arguments: Front.allCases)
    func anODataUploadsEmptyMIMETypeIsInferred(_ front: Front) async throws {
        let server = TestServer(respond: { _ in TestServer.http("204 No Content") })
        defer { server.stop() }
        let odata = Self.odata(server, front)
        let (directory, file) = try Self.noteFile()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try? await odata.uploadContainer(in: "Notes", key: 1, field: "doc", data: Data("hello".utf8), fileName: "note.txt", mimeType: "")
        _ = try? await odata.uploadContainer(in: "Notes", key: 1, field: "doc", fileURL: file, mimeType: "")
        let heads = server.heads
        #expect(heads.count == 2, "\(heads)")
        for head in heads {
            #expect(Self.fields(head).filter { $0.name == "content-type" }.map(\.value) == ["text/plain"], "\(head)")
        }
    }

    /// Values a caller gives that SwiftFM sends as header values: credentials (encoded, OAuth, a Claris ID provider's
    /// token) and a token in the caller's token store.
    enum CallerValue: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case encoded, oauth, clarisID, storedToken
        var testDescription: String { rawValue }
    }

    static let badTails = ["\r\nX-Injected: 1", "\nX-Injected: 1", "\u{0}X-Injected: 1", "\u{1}X-Injected"]

    /// A caller's value with a control character never reaches the wire, through the Data API (a login, a read) and
    /// OData: the call fails with -1002 (-1001 for the configured credentials) and no field is added or cut short.
    @Test(arguments: Front.allCases, CallerValue.allCases)
    func aCallersValueWithAControlCharacterIsNeverSent(_ front: Front, _ source: CallerValue) async throws {
        for tail in Self.badTails {
            let server = TestServer(respond: { _ in
                TestServer.json(#"{"response":{"token":"T1"},"messages":[{"code":"0","message":"OK"}]}"#,
                                headers: ["X-FM-Data-Access-Token": "T1"])
            })
            defer { server.stop() }
            var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
            configuration.retry = .none
            var store: FMMemoryTokenStore?
            switch source {
            case .encoded: configuration.credentials = .encoded("YWRtaW46cHc=" + tail)
            case .oauth: configuration.credentials = .oauth(requestId: "r" + tail, identifier: "i")
            case .clarisID: configuration.credentials = .clarisID(FMClarisIDTokenProvider(token: "tok" + tail))
            case .storedToken: store = FMMemoryTokenStore(FMStoredToken(token: "tok" + tail, expiry: Date().addingTimeInterval(600)))
            }
            let api = store.map { DataAPI(configuration: configuration, transport: front.transport(), tokenStore: $0) }
                ?? DataAPI(configuration: configuration, transport: front.transport())
            var calls: [(String, @Sendable () async throws -> Void)] = [("getRecord", { _ = try await api.getRecord(layout: "L", recordId: 1) })]
            if source == .encoded || source == .clarisID {
                let odata = FMOData(sharing: api)
                calls.append(("OData", { _ = try await odata.records(from: "Notes") }))
            }
            for (name, call) in calls {
                do {
                    try await call()
                    Issue.record("\(name) with \(tail.debugDescription) succeeded: \(server.heads)")
                } catch let error as FMError where source != .storedToken {
                    #expect([FMError.ClientCode.invalidArgument, FMError.ClientCode.invalidConfiguration].contains(error.code),
                            "\(name) with \(tail.debugDescription): \(error)")
                } catch {}
            }
            if source == .storedToken {
                // A stored token that cannot be sent is no token: SwiftFM logs in and reads with the new one.
                #expect(server.heads.count == 2 && !server.heads.contains { $0.contains("Bearer tok") }, "\(tail.debugDescription): \(server.heads)")
                #expect(server.heads.last?.contains("\r\nAuthorization: Bearer T1") == true, "\(server.heads)")
            } else {
                #expect(server.heads.isEmpty, "\(tail.debugDescription): \(server.heads)")
            }
        }
    }

    struct Tally: Sendable {
        var heads = 0
        var data = 0
        var ends = 0
        var error: URLError?
    }

    /// Sends `request` through `transport`, cancels its task twice at once when `cancel`, and awaits its first end.
    static func exchange(_ transport: any FMTransport, _ request: URLRequest, cancel: Bool = false) async -> Locked<Tally> {
        let tally = Locked(Tally())
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let task = transport.send(FMTransportRequest(urlRequest: request), events: FMTransportEvents(
                response: { _ in tally.withLock { $0.heads += 1 }; return true },
                data: { _ in tally.withLock { $0.data += 1 }; return true },
                complete: { error in
                    let first = tally.withLock { tally -> Bool in
                        tally.ends += 1
                        tally.error = error as? URLError
                        return tally.ends == 1
                    }
                    if first { continuation.resume() }
                }))
            if cancel { task.cancel(); task.cancel() }
        }
        return tally
    }

    /// ``FMURLSessionTransport``'s refusal of a field that would add a line (and libcurl's): one end, `badURL`, no head and
    /// no bytes, whether or not its task is cancelled; nothing reaches the server, and the transport sends the next
    /// request (which ends after the refused one's only end).
    @Test(arguments: Front.allCases, [false, true])
    func aRefusedRequestEndsOnceWithoutAHead(_ front: Front, _ cancel: Bool) async throws {
        let server = TestServer(respond: { _ in TestServer.http("200 OK", body: "ok") })
        defer { server.stop() }
        let transport = front.transport()
        var refused = URLRequest(url: try #require(URL(string: server.url + "/refused")))
        refused.allHTTPHeaderFields = ["X-Note": "a\r\nX-Injected: 1"]
        let tally = await Self.exchange(transport, refused, cancel: cancel)
        let next = await Self.exchange(transport, URLRequest(url: try #require(URL(string: server.url + "/next"))))
        #expect(next.withLock { $0.ends == 1 && $0.heads == 1 && $0.error == nil })
        tally.withLock { tally in
            #expect(tally.ends == 1 && tally.heads == 0 && tally.data == 0)
            #expect(tally.error?.code == .badURL, "\(String(describing: tally.error))")
        }
        #expect(server.heads.count == 1 && !server.heads.contains { $0.contains("X-Injected") }, "\(server.heads)")
    }

    /// Fields a transport cannot send as given: a NUL ends a field in libcurl (the rest of the value, or the whole
    /// field when in the name, was lost), and a name that is not a token (a space or tab, empty, a NUL) is no field.
    static let unsendable: [[String: String]] = [
        ["X-Note": "a\u{0}X-Injected: 1"], ["X-Note\u{0}X-Injected": "a"], ["X-Note ": "a"], ["X-Note\t": "a"], ["": "a"],
        ["X Note": "a"],
    ]

    @Test(arguments: Front.allCases, unsendable)
    func aFieldThatCannotBeSentAsGivenIsRefused(_ front: Front, _ fields: [String: String]) async throws {
        let server = TestServer(respond: { _ in TestServer.http("200 OK", body: "ok") })
        defer { server.stop() }
        var request = URLRequest(url: try #require(URL(string: server.url + "/field")))
        request.allHTTPHeaderFields = fields
        let tally = await Self.exchange(front.transport(), request)
        tally.withLock { tally in
            #expect(tally.ends == 1 && tally.heads == 0, "\(server.heads)")
            #expect(tally.error?.code == .badURL, "\(String(describing: tally.error))")
        }
        #expect(server.heads.isEmpty, "\(server.heads)")
    }

    /// A head's fields, each name in small letters, in the order sent.
    static func fields(_ head: String) -> [(name: String, value: String)] {
        head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
    }

    /// Every kind of request SwiftFM sends (a login with a data source, a read, a JSON write, multipart uploads from
    /// bytes and from a file, the container download's cookie hop, an OData read, a write and a `$batch`) carries each
    /// field once, `Authorization` and `Content-Type` where they belong, no `Expect`, and its own fields as built.
    @Test(arguments: Front.allCases)
    func everyKindOfRequestCarriesEachFieldOnce(_ front: Front) async throws {
        let server = TestServer(respond: { head in
            let line = head.prefix { $0 != "\r" }
            if line.hasPrefix("POST ") && line.contains("/sessions ") {
                return TestServer.json(#"{"response":{"token":"T1"},"messages":[{"code":"0","message":"OK"}]}"#,
                                       headers: ["X-FM-Data-Access-Token": "T1"])
            }
            if line.contains("/hop1 ") {
                return TestServer.http("302 Found", headers: ["Location": "/hop2", "Set-Cookie": "X-FMS-Session-Key=abc; Path=/"])
            }
            if line.contains("/hop2 ") { return TestServer.http("200 OK", body: "bytes") }
            return TestServer.json(#"{"response":{"recordId":"1","modId":"0","data":[]},"messages":[{"code":"0","message":"OK"}]}"#)
        })
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        configuration.retry = .none
        configuration.dataSources = [FMDataSource(database: "Other", username: "u2", password: "p2")]
        let api = DataAPI(configuration: configuration, transport: front.transport())
        let odata = FMOData(sharing: api)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("RequestHeadersAttack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("photo.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]).write(to: file)

        _ = try? await api.getRecord(layout: "L", recordId: 1)
        _ = try? await api.createRecord(layout: "L", payload: ["fieldData": ["a": "b"]])
        _ = try? await api.uploadContainer(layout: "L", recordId: 1, field: "Photo", data: Data("%PDF-1.4".utf8), fileName: "a.pdf")
        _ = try? await api.uploadContainer(layout: "L", recordId: 1, field: "Photo", fileURL: file)
        _ = try? await api.downloadContainer(url: try #require(URL(string: server.url + "/hop1")))
        _ = try? await odata.records(from: "Notes")
        _ = try? await odata.createRecord(in: "Notes", fields: ["a": "b"])
        var batch = FMODataBatch()
        batch.read(from: "Notes")
        batch.changeset([.create(in: "Notes", fields: ["a": "b"])])
        _ = try? await odata.batch(batch)
        var claris = configuration
        claris.credentials = .clarisID(FMClarisIDTokenProvider(token: "idtok"))
        let clarisAPI = DataAPI(configuration: claris, transport: front.transport())
        _ = try? await clarisAPI.getRecord(layout: "C", recordId: 2)
        _ = try? await FMOData(sharing: clarisAPI).records(from: "ClarisNotes")

        let requests = server.requests
        let lines = requests.map { String($0.head.prefix { $0 != "\r" }) }
        let kinds = ["POST /fmi/data/vLatest/databases/DB/sessions ", "GET /fmi/data/vLatest/databases/DB/layouts/L/records/1 ",
                     "POST /fmi/data/vLatest/databases/DB/layouts/L/records ", "/containers/Photo/1 ", "GET /hop1 ", "GET /hop2 ",
                     "GET /fmi/odata/v4/DB/Notes ", "POST /fmi/odata/v4/DB/Notes ", "POST /fmi/odata/v4/DB/$batch ",
                     "GET /fmi/data/vLatest/databases/DB/layouts/C/records/2 ", "GET /fmi/odata/v4/DB/ClarisNotes "]
        for kind in kinds { #expect(lines.contains { $0.contains(kind) }, "no \(kind)in \(lines)") }
        #expect(lines.filter { $0.contains("/containers/Photo/1 ") }.count == 2, "\(lines)")
        #expect(lines.filter { $0.contains("/sessions ") }.count == 2, "a login with a data source and a Claris ID one: \(lines)")
        for request in requests {
            let line = String(request.head.prefix { $0 != "\r" })
            let fields = Self.fields(request.head)
            let names = fields.map(\.name)
            func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
            #expect(Set(names).count == names.count, "\(line): a field twice: \(names)")
            #expect(!names.contains("expect"), "\(line)")
            let hasBody = line.hasPrefix("POST ") || line.hasPrefix("PATCH ")
            #expect(values("content-type").count == (hasBody ? 1 : 0), "\(line): \(fields)")
            if hasBody { #expect(values("content-length") == ["\(request.body.count)"], "\(line): \(fields), \(request.body.count) bytes") }
            if line.contains("/hop") {
                #expect(values("authorization").isEmpty, "\(line)")
                #expect(values("cookie") == (line.contains("/hop2 ") ? ["X-FMS-Session-Key=abc"] : []), "\(line): \(fields)")
            } else if line.contains("/sessions ") {
                #expect(values("authorization") == ["Basic " + Data("admin:pw".utf8).base64EncodedString()]
                        || values("authorization") == ["FMID idtok"], "\(line): \(fields)")
                #expect(String(decoding: request.body, as: UTF8.self).contains("\"fmDataSource\""), "\(line)")
                #expect(values("content-type") == ["application/json"], "\(line)")
            } else if line.contains("/fmi/odata/") {
                #expect(values("authorization") == [line.contains("/ClarisNotes") ? "FMID idtok" : "Basic " + Data("admin:pw".utf8).base64EncodedString()],
                        "\(line): \(fields)")
                #expect(values("odata-version") == ["4.0"] && values("odata-maxversion") == ["4.0"], "\(line): \(fields)")
                if line.contains("$batch") { #expect(values("content-type").first?.hasPrefix("multipart/mixed; boundary=") == true) }
            } else {
                #expect(values("authorization") == ["Bearer T1"], "\(line): \(fields)")
                if line.contains("/containers/") {
                    #expect(values("content-type").first?.hasPrefix("multipart/form-data; boundary=") == true, "\(line)")
                } else if hasBody {
                    #expect(values("content-type") == ["application/json"], "\(line)")
                }
            }
        }
    }

    /// Claris ID's Cognito requests (a refresh, then an SRP sign-in): one `Content-Type` (Amazon's JSON), one
    /// `X-Amz-Target`, a `Content-Length` as long as the body, no `Authorization`, no `Expect`, no field twice.
    static let refused: String = {
        let body = #"{"__type":"NotAuthorizedException","message":"Refresh Token has expired"}"#
        return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body
    }()

    @Test func cognitoRequestsCarryEachFieldOnce() async throws {
        let server = HostileCognito.server { target, index in
            switch (target, index) {
            case ("InitiateAuth", 0): return Self.refused   // the stored refresh token: refused, so an SRP sign-in follows
            case ("InitiateAuth", _): return HostileCognito.passwordVerifier()
            default: return HostileCognito.tokens(HostileCognito.jwt(#"{"iat":1,"exp":3601}"#))
            }
        }
        defer { server.stop() }
        let store = FMMemoryTokenStore(FMStoredToken(token: "refresh-0", expiry: Date().addingTimeInterval(600)))
        let signIn = HostileCognito.signIn(server, store: store)
        _ = await HostileCognito.fetch(signIn)
        let requests = server.requests
        #expect(requests.map { HostileCognito.target($0.head) } == ["InitiateAuth", "InitiateAuth", "RespondToAuthChallenge"],
                "\(server.heads)")
        for request in requests {
            let fields = Self.fields(request.head)
            let names = fields.map(\.name)
            func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
            #expect(Set(names).count == names.count, "a field twice: \(names)")
            #expect(values("content-type") == ["application/x-amz-json-1.1"], "\(fields)")
            #expect(values("x-amz-target").count == 1 && values("x-amz-target").first?.hasPrefix("AWSCognitoIdentityProviderService.") == true)
            #expect(values("content-length") == ["\(request.body.count)"], "\(fields)")
            #expect(!names.contains("authorization") && !names.contains("expect"), "\(names)")
        }
    }
}
