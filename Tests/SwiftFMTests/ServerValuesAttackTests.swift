import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// The values of a successful answer that SwiftFM keeps, sends back, or hands to code that sends them back, from a
/// hostile or broken server (review of what errors and codes reviews left out).
///
/// The contract:
/// - The login token goes into every later `Authorization: Bearer` header and into the token store: one that is empty
///   (`-1010`), holds anything but visible ASCII (a space, CR, LF, a control or non-ASCII character), or is longer than
///   ``RequestBuilder/maxSessionTokenBytes`` (4 KiB; a Data API token is some 50 characters) fails the login with
///   `-1007`; nothing is stored (nor written to the legacy `fm-token`), nothing is sent with it. A stored token that
///   breaks the same rules is not used: the client logs in. Only a login's token is kept, the body's before the
///   header's. The file store gives back exactly the token it was given, in its one file.
/// - A record id or mod id from an answer that a caller passes back names the caller's record and nothing else: a
///   record id that is not a positive integer in digits completes with `-1002` and sends nothing (and has no
///   `recordID`); a mod id goes into the JSON body as the same string, whatever it holds, and the URL is the record's.
/// - A page walk (`pages`, `forEachPage`, raw or typed) ends: a page whose records reach past its own `foundCount`
///   (negative, zero, smaller than the records it holds) and the same full page a third time in a row (a server or
///   proxy that ignores `_offset`; once again is records shifting) end the walk with `-1007`; that page is not
///   handed out.
/// - A container download sends no `Authorization` on any hop and the streaming cookie only within its origin
///   (scheme, host, port, however spelled); a URL or redirect that is not http(s) is never followed; a streaming
///   cookie that holds a control character is the server's unusable answer (`-1007`).
/// - Metadata, product info, database, layout and script lists of the wrong shape are `-1007`, never a crash; a
///   `dataInfo` or `portalDataInfo` count that is negative is `-1007` on every found-set read.
/// - Over both shipped transports: the spaces and tabs around a header value are not part of it; a header line longer
///   than the transport takes (a megabyte token) or a head it cannot read is a malformed answer (`-1003`,
///   ``FMError/isMalformedAnswer``), failing at once, never ridden out as a server that is away.
@Suite("Server values under attack")
struct ServerValuesAttackTests {
    static var loggedIn: FMMemoryTokenStore { FMMemoryTokenStore(FMStoredToken(token: "t", expiry: .distantFuture)) }

    /// A page of records `ids` (`recordId` as given), with a `dataInfo` of `found` records when given.
    static func page(ids: [Int], found: Int?) -> String {
        let rows = ids.map { #"{"fieldData":{"name":"n\#($0)"},"portalData":{},"recordId":"\#($0)","modId":"1"}"# }.joined(separator: ",")
        let info = found.map {
            #","dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":\#($0),"foundCount":\#($0),"returnedCount":\#(ids.count)}"#
        } ?? ""
        return #"{"response":{"data":[\#(rows)]\#(info)},"messages":[{"code":"0","message":"OK"}]}"#
    }

    struct Row: Decodable, Sendable { var name: String }

    /// The four page walks over `h.api`, each reduced to (records handed out, the error's code or nil).
    enum Walk: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case pages, typedPages, forEachPage, typedForEachPage
        var testDescription: String { rawValue }

        func run(_ api: DataAPI, pageSize: Int) async -> (records: [String], code: String?) {
            switch self {
            case .pages:
                var seen: [String] = []
                do {
                    for try await page in api.pages(layout: "L", pageSize: pageSize) {
                        seen += page.records.compactMap { $0["recordId"] as? String }
                    }
                    return (seen, nil)
                } catch { return (seen, (error as? FMError)?.code ?? "\(error)") }
            case .typedPages:
                var seen: [String] = []
                do {
                    for try await page in api.pages(as: Row.self, layout: "L", pageSize: pageSize) { seen += page.records.map(\.recordId) }
                    return (seen, nil)
                } catch { return (seen, (error as? FMError)?.code ?? "\(error)") }
            case .forEachPage:
                let seen = Locked<[String]>([])
                let done = Recorder<String>()
                api.forEachPage(layout: "L", pageSize: pageSize, page: { page in
                    seen.withLock { $0 += page.records.compactMap { $0["recordId"] as? String } }
                    return true
                }, completion: { _, code in done.record(code) })
                let code = await done.value().first
                return (seen.value, code == "0" ? nil : code)
            case .typedForEachPage:
                let seen = Locked<[String]>([])
                let done = Recorder<String>()
                api.forEachPage(as: Row.self, layout: "L", pageSize: pageSize, page: { page in
                    seen.withLock { $0 += page.records.map(\.recordId) }
                    return true
                }, completion: { _, code in done.record(code) })
                let code = await done.value().first
                return (seen.value, code == "0" ? nil : code)
            }
        }
    }

    // MARK: paging

    /// A server (or a caching proxy) that ignores `_offset` answers every page with the first one: the walk went on for
    /// ever, handing out the same records again and again (before the fix: 20 pages of records 1 and 2, then the
    /// test server's own end). Now the same full page a third time in a row ends the walk with `-1007`, not handed out.
    /// Decided: "the same" is the same record ids in the same order in a full page; once again is a walk (a page's
    /// worth of records created before the window meanwhile shifts the next page onto the last one, as documented),
    /// twice again is a server that does not move.
    @Test(arguments: Walk.allCases, [nil, 1_000_000] as [Int?])
    func aServerThatIgnoresTheOffsetEndsTheWalkWithMalformed(_ walk: Walk, found: Int?) async {
        let served = Locked(0)
        let h = Harness(store: Self.loggedIn) { _ in
            let count = served.withLock { n -> Int in n += 1; return n }
            if count > 20 { return .json(500, Bodies.noRecords) }   // so a walk that misses it still ends
            return .json(200, Self.page(ids: [1, 2], found: found))
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk): \(records.count) records, code \(code ?? "none")")
        #expect(records == ["1", "2", "1", "2"])
        #expect(h.stub.requests.count == 3)
    }

    /// Guard: the same full page once again (a page's worth of records created before the window between two pages,
    /// here with a page of one record) is a walk that goes on, the records seen twice, as documented.
    @Test(arguments: Walk.allCases)
    func theSamePageOnceAgainIsAShiftNotAnError(_ walk: Walk) async {
        let h = Harness(store: Self.loggedIn) { request in
            let query = request.url?.query ?? ""
            if query.contains("_offset=1&") { return .json(200, Self.page(ids: [7], found: 3)) }
            if query.contains("_offset=2&") { return .json(200, Self.page(ids: [7], found: 3)) }
            if query.contains("_offset=3&") { return .json(200, Self.page(ids: [8], found: 3)) }
            return nil
        }
        let (records, code) = await walk.run(h.api, pageSize: 1)
        #expect(code == nil)
        #expect(records == ["7", "7", "8"])
    }

    /// A page holding more records than its own `foundCount` says the set has (negative, zero, one for two records):
    /// the walk stopped after it without a word, as if the set were complete. Now `-1007`, the page not handed out.
    @Test(arguments: Walk.allCases, [-5, 0, 1, Int.min])
    func aPagePastItsOwnFoundCountIsMalformed(_ walk: Walk, found: Int) async {
        let h = Harness(store: Self.loggedIn) { _ in .json(200, Self.page(ids: [1, 2], found: found)) }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == FMError.ClientCode.malformedResponse, "\(walk): \(records) code \(code ?? "none")")
        #expect(records.isEmpty)
        #expect(h.stub.requests.count == 1)
    }

    /// A `dataInfo` with a negative count (no set holds fewer than no records) was handed out as it came, to code that
    /// sizes, loops or allocates by it. Now every read of a found set — raw, typed, callback, async, and the bytes read
    /// with `FMFoundSet(responseBody:)` — fails with `-1007` naming the count.
    @Test(arguments: ["totalRecordCount", "foundCount", "returnedCount"], [-1, Int.min])
    func aNegativeCountInDataInfoIsMalformed(count: String, value: Int) async {
        let body = Self.page(ids: [1], found: 1).replacingOccurrences(of: #""\#(count)":1"#, with: #""\#(count)":\#(value)"#)
        #expect(body.contains("\(value)"))
        let h = Harness(store: Self.loggedIn) { _ in .json(200, body) }
        var codes: [String?] = []
        do { _ = try await h.api.getRecords(layout: "L"); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try await h.api.getRecords(as: Row.self, layout: "L"); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        let raw = Recorder<String>()
        h.api.getRecords(layout: "L") { _, code in raw.record(code) }
        codes += await raw.value().map { $0 }
        do { _ = try FMFoundSet(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try FMTypedFoundSet<Row>(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try JSONDecoder().decode(FMDataInfo.self, from: Data(#"{"\#(count)":\#(value)}"#.utf8)); codes.append(nil) } catch {
            codes.append(error is DecodingError ? FMError.ClientCode.malformedResponse : "\(error)")
        }
        #expect(codes == Array(repeating: FMError.ClientCode.malformedResponse, count: 6), "\(count) \(value)")
    }

    /// The same rule for a record's `portalDataInfo` (what portal paging reads): a negative `foundCount` or
    /// `returnedCount` was handed out as it came; every typed read now fails with `-1007`.
    @Test(arguments: ["foundCount", "returnedCount"])
    func aNegativeCountInPortalDataInfoIsMalformed(count: String) async {
        let info = #"{"portalObjectName":"p","database":"D","table":"T","foundCount":1,"returnedCount":1}"#
            .replacingOccurrences(of: #""\#(count)":1"#, with: #""\#(count)":-1"#)
        let body = #"{"response":{"data":[{"fieldData":{"name":"n"},"portalData":{"p":[]},"recordId":"1","modId":"1","portalDataInfo":[\#(info)]}],"#
            + #""dataInfo":{"database":"D","layout":"L","table":"T","totalRecordCount":1,"foundCount":1,"returnedCount":1}},"#
            + Self.okMessages + "}"
        let h = Harness(store: Self.loggedIn) { _ in .json(200, body) }
        var codes: [String?] = []
        do { _ = try await h.api.getRecords(as: Row.self, layout: "L"); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try FMTypedFoundSet<Row>(responseBody: Data(body.utf8)); codes.append(nil) } catch { codes.append((error as? FMError)?.code) }
        do { _ = try JSONDecoder().decode(FMPortalDataInfo.self, from: Data(info.utf8)); codes.append(nil) } catch {
            codes.append(error is DecodingError ? FMError.ClientCode.malformedResponse : "\(error)")
        }
        #expect(codes == Array(repeating: FMError.ClientCode.malformedResponse, count: 3), "\(count)")
    }

    /// Guard (held): a walk whose pages overlap by one record (one created meanwhile) and a last page reaching the
    /// found count exactly is an ordinary walk; the offsets sent are the caller's windows.
    @Test(arguments: Walk.allCases)
    func overlappingPagesAndAnExactFoundCountStayAWalk(_ walk: Walk) async {
        let h = Harness(store: Self.loggedIn) { request in
            let query = request.url?.query ?? ""
            if query.contains("_offset=1&") { return .json(200, Self.page(ids: [1, 2], found: 5)) }
            if query.contains("_offset=3&") { return .json(200, Self.page(ids: [2, 3], found: 5)) }
            if query.contains("_offset=5&") { return .json(200, Self.page(ids: [4], found: 5)) }
            return nil
        }
        let (records, code) = await walk.run(h.api, pageSize: 2)
        #expect(code == nil)
        #expect(records == ["1", "2", "2", "3", "4"])
        #expect(h.stub.requests.compactMap { $0.url?.query } == ["_offset=1&_limit=2", "_offset=3&_limit=2", "_offset=5&_limit=2"])
    }
}

// MARK: the login token

extension ServerValuesAttackTests {
    /// Where a login answer carries its token.
    enum TokenSource: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case body, header
        var testDescription: String { rawValue }

        func answer(_ token: String) -> StubAnswer {
            switch self {
            case .body:
                let object: [String: Any] = ["response": ["token": token], "messages": [["code": "0", "message": "OK"]]]
                let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
                return .json(200, String(decoding: body, as: UTF8.self))
            case .header:
                return .json(200, Bodies.ok, headers: ["X-FM-Data-Access-Token": token])
            }
        }
    }

    /// A login answered with `token`, then one read: (the login's code or nil, the read's Authorization values, what
    /// the store holds).
    static func loginThenRead(_ token: String, from source: TokenSource) async -> (code: String?, bearers: [String], stored: String?) {
        let h = Harness { request in isLogin(request) ? source.answer(token) : .json(200, Self.page(ids: [1], found: 1)) }
        var code: String?
        do { _ = try await h.api.login() } catch { code = (error as? FMError)?.code ?? "\(error)" }
        _ = try? await h.api.getRecord(layout: "L", recordId: 1)
        let bearers = h.stub.requests.filter { !isLogin($0) }.compactMap { $0.header("Authorization") }
        return (code, bearers, h.store.load()?.token)
    }

    /// A login token of megabytes was taken as it came: kept in the store and sent in every later `Authorization`
    /// header, which no server takes back (a header line of a few KiB is the usual limit), so every call failed at the
    /// server instead of the login failing here. Decided: a Data API token is some 50 characters; one longer than
    /// 4 KiB is no token, `-1007` at the login, nothing stored or sent (4 KiB exactly still is one).
    @Test(arguments: TokenSource.allCases, [4097, 100_000, 1_000_000])
    func aLoginTokenLongerThan4KiBIsMalformed(_ source: TokenSource, bytes: Int) async {
        let token = String(repeating: "a", count: bytes)
        let (code, bearers, stored) = await Self.loginThenRead(token, from: source)
        #expect(code == FMError.ClientCode.malformedResponse)
        #expect(stored == nil)
        #expect(!bearers.contains { $0.count > RequestBuilder.maxSessionTokenBytes }, "\(bearers.map(\.count))")
    }

    /// Guard (held at the boundary): a 4 KiB token is a token, stored and sent back as it came.
    @Test(arguments: TokenSource.allCases)
    func aLoginTokenOf4KiBIsUsed(_ source: TokenSource) async {
        let token = String(repeating: "b", count: 4096)
        let (code, bearers, stored) = await Self.loginThenRead(token, from: source)
        #expect(code == nil)
        #expect(stored == token)
        #expect(bearers == ["Bearer " + token])
    }

    /// Guard (held): a token that cannot be a `Bearer` value (empty, a space, CR/LF, a tab, DEL, non-ASCII) fails the
    /// login with `-1007` (or `-1010` when empty, as none); nothing stored, nothing sent with it.
    @Test(arguments: TokenSource.allCases, ["", "tok en", " tok", "tok\r\nX-Injected: 1", "tok\t", "tok\u{7F}", "tök", "tok\u{0}"])
    func aLoginTokenThatIsNoBearerValueIsRefused(_ source: TokenSource, token: String) async {
        // A header value cannot hold CR, LF or NUL on the wire: the stub's header would not be one either; the spaces
        // and tabs around a header value are not part of it (aHeaderTokensSurroundingWhitespaceIsNotPartOfIt).
        if source == .header, token.contains(where: { $0 == "\r\n" || $0 == "\u{0}" })
            || token != token.trimmingCharacters(in: CharacterSet(charactersIn: " \t")) { return }
        let (code, bearers, stored) = await Self.loginThenRead(token, from: source)
        #expect(code == (token.isEmpty ? FMError.ClientCode.noToken : FMError.ClientCode.malformedResponse), "\(token.debugDescription)")
        #expect(stored == nil)
        #expect(!bearers.contains("Bearer " + token) || token.isEmpty)
    }

    /// A stored token longer than 4 KiB (written by another client, or before this rule) is not sent: the client logs
    /// in and uses the new token, as for a stored token that is no `Bearer` value.
    @Test func aStoredTokenLongerThan4KiBIsNotUsed() async throws {
        let long = String(repeating: "c", count: 100_000)
        let store = FMMemoryTokenStore(FMStoredToken(token: long, expiry: .distantFuture))
        let h = Harness(store: store) { request in isLogin(request) ? .json(200, Bodies.login()) : .json(200, Self.page(ids: [1], found: 1)) }
        _ = try await h.api.getRecord(layout: "L", recordId: 1)
        let bearers = h.stub.requests.filter { !isLogin($0) }.compactMap { $0.header("Authorization") }
        #expect(bearers == ["Bearer " + Bodies.token])
        #expect(h.stub.requests.filter(isLogin).count == 1)
    }

    /// Guard (held): the file store gives back exactly the token it was given, whatever JSON has to escape in it, in
    /// its one file (mode 0600), and nothing else in the directory.
    @Test func theFileStoreGivesBackTheTokenItWasGiven() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ServerValuesAttack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("token.json")
        let store = FMFileTokenStore(url: file)
        for token in [#"a"b"#, #"a\b"#, "../../x", "a/b", "{}", "\u{2028}", String(repeating: "x", count: 100_000)] {
            let stored = FMStoredToken(token: token, expiry: Date(timeIntervalSince1970: 1_700_000_000))
            store.save(stored)
            #expect(store.load() == stored, "\(token.prefix(12).debugDescription)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["token.json"])
            let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }
}

// MARK: container downloads

extension ServerValuesAttackTests {
    static let containerURL = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.png?RCType=EmbeddedRCFileProcessor")!

    /// A download of ``containerURL`` whose first hop answers 302 to `location` with `setCookie`, every other URL the
    /// bytes `[1]`, by a client holding a session token: (the code, every request sent).
    static func download(redirectTo location: String, setCookie: String = "X-FMS-Session-Key=k1; HttpOnly; Path=/")
        -> (code: String?, requests: [URLRequest]) {
        let h = Harness(store: Self.loggedIn) { request in
            guard let url = request.url else { return nil }
            if url.absoluteString != Self.containerURL.absoluteString { return .body(200, Data([1]), contentType: "image/png") }
            return .json(302, "", headers: ["Location": location, "Set-Cookie": setCookie])
        }
        let done = Recorder<String>()
        h.api.downloadContainer(url: Self.containerURL) { _, code in done.record(code) }
        return (done.wait().first, h.stub.requests)
    }

    /// A streaming cookie holding a control character (a tab, SOH, DEL: no cookie value may) could not be sent back, and
    /// the download failed with `-1002`, the caller's fault, for a URL the caller gave as it came. Now it is the
    /// server's answer that is unusable: `-1007`, and nothing more is sent.
    @Test(arguments: ["X-FMS-Session-Key=k\t1; Path=/", "X-FMS-Session-Key=k1\u{1}; Path=/", "X-FMS-Session-Key=k1\u{7F}; Path=/"])
    func aStreamingCookieWithAControlCharacterIsMalformed(setCookie: String) {
        let (code, requests) = Self.download(redirectTo: "/second", setCookie: setCookie)
        #expect(code == FMError.ClientCode.malformedResponse)
        #expect(requests.count == 1)
    }

    /// Guard (held): no hop of a download carries an `Authorization` (the session token stays home), and the streaming
    /// cookie goes only where it came from — the same scheme, host and port however spelled — never to a look-alike
    /// host, another port or scheme, or a host behind user info.
    @Test(arguments: [
        ("/second", true), ("HTTPS://FMS.EXAMPLE.COM:443/second", true), ("https://user:pw@fms.example.com/second", true),
        ("//elsewhere.example.net/x", false), ("https://fms.example.com@elsewhere.example.net/x", false),
        ("https://fms.example.com.elsewhere.example.net/x", false), ("https://fms.example.com:8443/x", false),
        ("http://fms.example.com/x", false), ("https://fms.example.com%2F@elsewhere.example.net/x", false),
        ("https://user:pw@elsewhere.example.net/x", false),
    ])
    func theStreamingCookieStaysInItsOriginAndNoHopIsAuthorized(location: String, sameOrigin: Bool) {
        let (code, requests) = Self.download(redirectTo: location)
        #expect(code == "0")
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.header("Authorization") == nil })
        #expect(requests.last?.header("Cookie") == (sameOrigin ? "X-FMS-Session-Key=k1" : nil), "\(location)")
    }

    /// Guard (held): a container URL from field data that is not http(s) (`file:`, `ftp:`, `data:`) is never fetched,
    /// nor is a redirect to one (or to a URL without a host).
    @Test(arguments: ["file:///etc/passwd", "ftp://fms.example.com/x", "data:text/plain,hi", "FILE:///etc/passwd"])
    func aContainerURLThatIsNotHTTPIsNeverFetched(url: String) throws {
        let h = Harness(store: Self.loggedIn) { _ in .body(200, Data([1]), contentType: "image/png") }
        let done = Recorder<String>()
        h.api.downloadContainer(url: try #require(URL(string: url))) { _, code in done.record(code) }
        #expect(done.wait().first == FMError.ClientCode.invalidArgument)
        #expect(h.stub.requests.isEmpty)
        let (code, requests) = Self.download(redirectTo: url)
        #expect(code == FMError.ClientCode.malformedResponse)
        #expect(requests.count == 1)
    }
}

// MARK: record ids and mod ids

extension ServerValuesAttackTests {
    /// A create answered with `recordId` and `modId` (any JSON-encodable text), every other request answered with a page.
    static func creating(recordId: String, modId: String = "1") -> Harness {
        Harness(store: Self.loggedIn) { request in
            guard request.httpMethod == "POST", request.url?.path.hasSuffix("/layouts/L/records") == true else {
                return .json(200, Self.page(ids: [1], found: 1))
            }
            let object: [String: Any] = ["response": ["recordId": recordId, "modId": modId], "messages": [["code": "0", "message": "OK"]]]
            return .json(200, String(decoding: (try? JSONSerialization.data(withJSONObject: object)) ?? Data(), as: UTF8.self))
        }
    }

    static let notRecordIds = ["1/../2", "..", "1?x=1", "1#f", "%2F", "1\r\n", "-1", "0", "+5", "abc", "99999999999999999999", " 1", "1 ", "",
                               "١٢", String(repeating: "9", count: 1_000_000)]

    /// Guard (held): a record id from an answer that is not one (a path, a query, a fragment, an escape, a line break,
    /// a sign, zero, too big, megabytes) goes back into no request: every call that names a record by it completes with
    /// `-1002` and sends nothing, so no request can reach another path or add a parameter.
    @Test(arguments: notRecordIds)
    func aRecordIdThatIsNoRecordIdIsNeverSentBack(recordId: String) async throws {
        let h = Self.creating(recordId: recordId)
        let ref = try await h.api.createRecord(layout: "L", fieldData: ["a": "b"])
        #expect(ref.recordId == recordId)
        let sent = h.stub.requests.count
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("getRecord", { _ = try await h.api.getRecord(layout: "L", recordId: ref.recordId) }),
            ("editRecord", { _ = try await h.api.editRecord(layout: "L", recordId: ref.recordId, fieldData: ["a": "c"], modId: ref.modId) }),
            ("deleteRecord", { _ = try await h.api.deleteRecord(layout: "L", recordId: ref.recordId) }),
            ("duplicateRecord", { _ = try await h.api.duplicateRecord(layout: "L", recordId: ref.recordId) }),
            ("uploadContainer", { _ = try await h.api.uploadContainer(layout: "L", recordId: ref.recordId, field: "f", data: Data([1]), fileName: "a.png") }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) succeeded")
            } catch {
                #expect((error as? FMError)?.code == FMError.ClientCode.invalidArgument, "\(name): \(error)")
            }
        }
        #expect(h.stub.requests.count == sent, "\(h.stub.requests.dropFirst(sent).compactMap { $0.url?.absoluteString.prefix(120) })")
    }

    /// `recordID`, the integer form old `Int` calls take, read any integer text: `"-1"` gave -1 and `"+5"` gave 5, so
    /// `getRecord(layout:recordId: ref.recordID!)` sent `records/-1` for an id the `String` calls refuse. Decided: one
    /// rule for a record id, a positive integer in digits; anything else has no integer form (`nil`).
    @Test(arguments: ["-1", "+5", "0", " 1", "99999999999999999999", "1/../2"])
    func recordIDIsNilForTextThatIsNoRecordId(recordId: String) async throws {
        let h = Self.creating(recordId: recordId)
        let ref = try await h.api.createRecord(layout: "L", fieldData: ["a": "b"])
        #expect(ref.recordID == nil)
        #expect(FMRecord<Row>(recordId: recordId, modId: "1", fieldData: Row(name: "n")).recordID == nil)
        #expect(FMPortalRow(recordId: recordId, modId: nil, fields: [:]).recordID == nil)
    }

    /// Guard (held): a record id with leading zeros is the same record (`"007"` → `records/7`), and `recordID` agrees.
    @Test func aRecordIdWithLeadingZerosNamesTheSameRecord() async throws {
        let h = Self.creating(recordId: "007")
        let ref = try await h.api.createRecord(layout: "L", fieldData: ["a": "b"])
        #expect(ref.recordID == 7)
        _ = try await h.api.getRecord(layout: "L", recordId: ref.recordId)
        #expect(h.stub.requests.last?.url?.path.hasSuffix("/layouts/L/records/7") == true)
    }

    /// Guard (held): a mod id goes back as the same JSON string whatever it holds (a line break, a quote, NUL, a path,
    /// megabytes), in the body of a request to the caller's record, with no query.
    @Test(arguments: ["1\r\nX-Injected: 1", #""x""#, "1\u{0}", "../2", "1?x=1#f", String(repeating: "9", count: 1_000_000)])
    func aModIdGoesBackAsTheSameStringToTheSameRecord(modId: String) async throws {
        let h = Self.creating(recordId: "5", modId: modId)
        let ref = try await h.api.createRecord(layout: "L", fieldData: ["a": "b"])
        _ = try await h.api.editRecord(layout: "L", recordId: ref.recordId, fieldData: ["a": "c"], modId: ref.modId)
        let edit = try #require(h.stub.requests.last)
        #expect(edit.httpMethod == "PATCH")
        #expect(edit.url?.path == "/fmi/data/vLatest/databases/Contacts/layouts/L/records/5")
        #expect(edit.url?.query == nil)
        let body = try JSONSerialization.jsonObject(with: edit.httpBody ?? Data()) as? [String: Any]
        #expect(body?["modId"] as? String == modId)
    }
}

// MARK: the legacy surfaces

extension ServerValuesAttackTests {
    /// The legacy logins (DataAPI.swift 2019 and 2020, SwiftFM 2.x `newSession`) against a server answering `token`,
    /// with `fm-token` holding "old" before: (the codes, what `fm-token` holds after each).
    static func legacyLogins(answering token: String) async throws -> [(code: String, stored: String?)] {
        let object: [String: Any] = ["response": ["token": token], "messages": [["code": "0", "message": "OK"]]]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        return try await legacySetting(serving: body) { defaults in
            var outcomes: [(code: String, stored: String?)] = []
            for era in 0..<3 {
                defaults.set("old", forKey: "fm-token")
                let code: String = await DataAPI.withLegacyDefaults(defaults) {
                    switch era {
                    case 0:
                        let done = Recorder<String>()
                        DataAPI.refreshToken(for: basicValue("admin", "pw")) { (_: String?, _: Date?, code: String) in done.record(code) }
                        return await done.value().first ?? "none"
                    case 1:
                        let done = Recorder<String>()
                        DataAPI.refreshToken(auth: basicValue("admin", "pw")) { _, code, _ in done.record(code) }
                        return await done.value().first ?? "none"
                    default:
                        return await SwiftFM.newSession() == nil ? "failed" : "0"
                    }
                }
                outcomes.append((code, defaults.string(forKey: "fm-token")))
            }
            return outcomes
        }
    }

    /// Runs `body` with a fresh `UserDefaults` suite set up as the legacy surfaces read it (`fm-host`, `fm-db`,
    /// `fm-db-path`, `fm-auth`) for a loopback server answering every request with `answer`; both go afterwards.
    static func legacySetting<T>(serving answer: String, _ body: (UserDefaults) async throws -> T) async throws -> T {
        let server = TestServer(respond: { _ in TestServer.json(answer) })
        defer { server.stop() }
        return try await LegacyAttackTests.legacySetting(server, body)
    }

    /// The legacy logins write `fm-token` in `UserDefaults`, which old code sends back as it finds it: a token longer
    /// than 4 KiB, or one that is no `Bearer` value, fails the login (`-1007`) and leaves `fm-token` as it was.
    @Test(arguments: [String(repeating: "a", count: 100_000), "tok\r\nX-Injected: 1", "tok en", "tök"])
    func aLegacyLoginNeverStoresATokenThatIsNone(token: String) async throws {
        let outcomes = try await Self.legacyLogins(answering: token)
        #expect(outcomes.map(\.code) == [FMError.ClientCode.malformedResponse, FMError.ClientCode.malformedResponse, "failed"])
        #expect(outcomes.map(\.stored) == ["old", "old", "old"])
    }

    /// SwiftFM 2.x's `FMResult.DataInfo` kept a negative count as the server wrote it, where ``FMDataInfo`` refuses
    /// one: its record fetches (`getRecord`, `getRecords`, `query`) now throw `-1007` too.
    @Test(arguments: [("foundCount", -1), ("totalRecordCount", -5), ("returnedCount", Int(Int32.min))])
    func aLegacyFetchWithANegativeCountIsMalformed(count: String, value: Int) async throws {
        let good = Self.page(ids: [1], found: 1)
        let bad = good.replacingOccurrences(of: #""\#(count)":1"#, with: #""\#(count)":\#(value)"#)
        #expect(bad != good)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(FMResult.DataInfo.self, from: Data(#"{"\#(count)":\#(value)}"#.utf8))
        }
        for (body, expected) in [(good, "0"), (bad, FMError.ClientCode.malformedResponse)] {
            let code: String = try await Self.legacySetting(serving: body) { defaults in
                await DataAPI.withLegacyDefaults(defaults) {
                    do {
                        let (_, info) = try await SwiftFM.getRecord(id: 1, layout: "L", token: Bodies.token)
                        return info.foundCount == 1 ? "0" : "a count of \(info.foundCount)"
                    } catch {
                        return (error as? FMError)?.code ?? "\(error)"
                    }
                }
            }
            #expect(code == expected, "\(count) \(value)")
        }
    }

    /// Guard (held): a good token is stored as it came, by every legacy login.
    @Test func aLegacyLoginStoresAGoodToken() async throws {
        let outcomes = try await Self.legacyLogins(answering: Bodies.token)
        #expect(outcomes.map(\.code) == ["0", "0", "0"])
        #expect(outcomes.map(\.stored) == [Bodies.token, Bodies.token, Bodies.token])
    }
}

// MARK: metadata and lists

extension ServerValuesAttackTests {
    static let okMessages = #""messages":[{"code":"0","message":"OK"}]"#

    /// What a metadata call made of `body`: the value's description or the error's code.
    enum Listing: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case layoutMetadata, layouts, scripts, productInfo, databases
        var testDescription: String { rawValue }

        func run(_ body: String) async -> Result<String, FMError> {
            let h = Harness(store: ServerValuesAttackTests.loggedIn) { _ in .json(200, body) }
            do {
                switch self {
                case .layoutMetadata: return .success("\(try await h.api.layoutMetadata(layout: "L"))")
                case .layouts: return .success("\(try await h.api.layouts())")
                case .scripts: return .success("\(try await h.api.scripts())")
                case .productInfo: return .success("\(try await h.api.productInfo())")
                case .databases: return .success("\(try await h.api.databases())")
                }
            } catch let error as FMError {
                return .failure(error)
            } catch {
                return .failure(FMError(code: "unexpected", message: "\(error)"))
            }
        }

        /// The answer's `response` key.
        var key: String {
            switch self {
            case .layoutMetadata: "fieldMetaData"
            case .layouts: "layouts"
            case .scripts: "scripts"
            case .productInfo: "productInfo"
            case .databases: "databases"
            }
        }
    }

    /// Guard (held): a list or model of the wrong shape — a string, a number, an object for a list, entries without a
    /// name, a name that is a number — is `-1007`, never a crash nor a value.
    @Test(arguments: Listing.allCases, [#""x""#, "1", "null", "{}", "[]", #"[{}]"#, #"[{"name":1}]"#, #"{"name":[]}"#, #"[{"name":"a","isFolder":true,"folderLayoutNames":"x","folderScriptNames":"x"}]"#])
    func aListOfTheWrongShapeIsMalformed(_ listing: Listing, value: String) async {
        // Shapes that are right for one call: an empty list; a named entry whose folder keys that call does not read.
        let folder = #"[{"name":"a","isFolder":true,"folderLayoutNames":"x","folderScriptNames":"x"}]"#
        let fine: [Listing: Set<String>] = [.layouts: ["[]"], .scripts: ["[]"], .databases: ["[]", folder], .layoutMetadata: ["[]", folder]]
        if fine[listing]?.contains(value) == true { return }
        let result = await listing.run(#"{"response":{"\#(listing.key)":\#(value)},\#(Self.okMessages)}"#)
        #expect(result.testFailureCode == FMError.ClientCode.malformedResponse, "\(listing) \(value): \(result)")
    }

    /// Guard (held): folders nested deeper than any JSON reader takes (10,000 levels) are a failure of the answer
    /// (`-1006`/`-1007`), not a stack overflow.
    @Test(arguments: [Listing.layouts, .scripts])
    func foldersNestedTenThousandDeepAreAFailureNotACrash(_ listing: Listing) async {
        let child = listing == .layouts ? "folderLayoutNames" : "folderScriptNames"
        let depth = 10_000
        let open = String(repeating: #"{"name":"f","isFolder":true,"\#(child)":["#, count: depth)
        let body = #"{"response":{"\#(listing.key)":["# + open + String(repeating: "]}", count: depth) + "]}," + Self.okMessages + "}"
        let result = await listing.run(body)
        #expect([FMError.ClientCode.malformedResponse, FMError.ClientCode.notJSON].contains(result.testFailureCode ?? "none"), "\(result)")
    }

    /// Guard (held), decided: duplicates are the server's to send and are kept as sent, in order (a layout's fields, value
    /// lists, layouts, databases), no crash; `field(named:)` gives the first of a name.
    @Test func duplicatesAreKeptAsSent() async throws {
        let body = #"{"response":{"fieldMetaData":[{"name":"a","result":"text"},{"name":"a","result":"number"}],"portalMetaData":{"p":[],"p":[{"name":"p::x"}]},"valueLists":[{"name":"v","values":[]},{"name":"v","values":[]}]},"# + Self.okMessages + "}"
        let h = Harness(store: Self.loggedIn) { _ in .json(200, body) }
        let metadata = try await h.api.layoutMetadata(layout: "L")
        #expect(metadata.fieldMetaData.map(\.name) == ["a", "a"])
        #expect(metadata.field(named: "a")?.result == "text")
        #expect(metadata.valueLists.map(\.name) == ["v", "v"])
        #expect(Array(metadata.portalMetaData.keys) == ["p"])
    }
}

// MARK: a header line no transport takes (over loopback)

extension ServerValuesAttackTests {
    /// A login (`onLogin`) or a read answered with a header line of 150 KB — a megabyte `X-FM-Data-Access-Token`, past
    /// the 100 KB libcurl takes for one line — through `front`, from a host that answered before: (the error, the
    /// logins sent, the reads sent).
    static func aHugeHeaderLine(_ front: RequestHeadersAttackTests.Front, onLogin: Bool) async -> (error: FMError?, logins: Int, reads: Int) {
        let line = "X-FM-Data-Access-Token: " + String(repeating: "a", count: 150_000) + "\r\n"
        let page = Self.page(ids: [1], found: 1)
        let server = TestServer(respond: { head in
            if head.hasPrefix("GET /fmi/data/vLatest/productInfo") {
                return TestServer.json(#"{"response":{"productInfo":{"name":"FileMaker Data API Engine","version":"21"}},"# + Self.okMessages + "}")
            }
            let login = head.hasPrefix("POST ")
            let body = login ? Bodies.login() : page
            return "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + (login == onLogin ? line : "") + "\r\n" + body
        })
        defer { server.stop() }
        // The hang bound, not 20 s: the malformed answer fails at once, and a loaded machine could pass 20 s first (-1004).
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        configuration.retry = .standard
        let api = DataAPI(configuration: configuration, transport: front.transport(), tokenStore: FMMemoryTokenStore())
        _ = try? await api.productInfo()   // the host has answered: a failure of it now would be ridden out as a restart
        var failure: FMError?
        do { _ = try await api.getRecord(layout: "L", recordId: 1) } catch { failure = error as? FMError }
        await api.shutdown()
        return (failure, server.count("POST "), server.count("GET /fmi/data/vLatest/databases"))
    }

    /// A header line longer than the transport takes (libcurl: 100 KB, for both shipped transports on Linux) failed as
    /// "Out of memory", a connection failure (`URLError(-1 unknown)`): the login, or the read, was sent again and again
    /// until its deadline as if the server were restarting (before: 10 logins, or 11 reads, in the 8 s of a probe). It is
    /// a malformed answer now: `-1003` that ``FMError/isMalformedAnswer`` names, at once, sent once.
    @Test(arguments: RequestHeadersAttackTests.Front.allCases, [true, false])
    func aHeaderLineLongerThanTheTransportTakesFailsAtOnce(_ front: RequestHeadersAttackTests.Front, onLogin: Bool) async {
        let (error, logins, reads) = await Self.aHugeHeaderLine(front, onLogin: onLogin)
        #expect(error?.code == FMError.ClientCode.transport, "\(String(describing: error))")
        #expect(error?.isMalformedAnswer == true, "\(String(describing: error))")
        #expect(logins == 1)
        #expect(reads == (onLogin ? 0 : 1))
    }
}

extension ServerValuesAttackTests {
    /// A login's `200` answer, whole, with `tokenLine` as its token header written as a server may write it.
    static func loginAnswer(tokenLine: String) -> String {
        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(Bodies.ok.utf8.count)\r\n"
            + tokenLine + "\r\n\r\n" + Bodies.ok
    }

    /// The whitespace around a header value is not part of it (RFC 9110 §5.5): `X-FM-Data-Access-Token:  T1 ` is the
    /// token `T1`. Before, ``FMCurlTransport`` read it so but corelibs URLSession kept the spaces and tabs, and the login
    /// failed with `-1007` (a token holding a space) on one shipped transport and not the other.
    @Test(arguments: RequestHeadersAttackTests.Front.allCases, ["T1   ", "\tT1\t", "  T1"])
    func aHeaderTokensSurroundingWhitespaceIsNotPartOfIt(_ front: RequestHeadersAttackTests.Front, value: String) async throws {
        let page = Self.page(ids: [1], found: 1)
        let server = TestServer(respond: { head in
            guard head.hasPrefix("POST ") else { return TestServer.json(page) }
            return Self.loginAnswer(tokenLine: "X-FM-Data-Access-Token: \(value)")
        })
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: front.transport(), tokenStore: FMMemoryTokenStore())
        #expect(try await api.login() == "T1")
        _ = try await api.getRecord(layout: "L", recordId: 1)
        let read = try #require(server.heads.last)
        #expect(RequestHeadersAttackTests.fields(read).filter { $0.name == "authorization" }.map(\.value) == ["Bearer T1"], "\(read)")
        await api.shutdown()
    }
}

extension ServerValuesAttackTests {
    /// corelibs URLSession refuses a head holding `X-FM-Data-Access-Token:T1   ` (no space after the colon, spaces at the
    /// end) with "Failed writing header", `URLError(-1 unknown)`: it was reported as a connection that failed before
    /// FileMaker answered, which a read from a host that answered before rides out as a restart. A head the transport
    /// cannot read is a malformed answer now (`-1003`, ``FMError/isMalformedAnswer``), sent once; libcurl reads `T1`.
    @Test(arguments: RequestHeadersAttackTests.Front.allCases)
    func aHeadTheTransportCannotReadIsAMalformedAnswer(_ front: RequestHeadersAttackTests.Front) async {
        let server = TestServer(respond: { head in
            if head.hasPrefix("GET /fmi/data/vLatest/productInfo") {
                return TestServer.json(#"{"response":{"productInfo":{"name":"FileMaker Data API Engine","version":"21"}},"# + Self.okMessages + "}")
            }
            guard head.hasPrefix("POST ") else { return TestServer.json(Self.page(ids: [1], found: 1)) }
            return Self.loginAnswer(tokenLine: "X-FM-Data-Access-Token:T1   ")
        })
        defer { server.stop() }
        // The hang bound, not 20 s: the malformed answer fails at once, and a loaded machine could pass 20 s first (-1004).
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: TestBound.seconds)
        configuration.retry = .standard
        let api = DataAPI(configuration: configuration, transport: front.transport(), tokenStore: FMMemoryTokenStore())
        _ = try? await api.productInfo()
        do {
            #expect(try await api.login() == "T1")
        } catch {
            #expect((error as? FMError)?.isMalformedAnswer == true, "\(error)")
        }
        #expect(server.count("POST ") == 1)
        await api.shutdown()
    }
}

extension ServerValuesAttackTests {
    /// Guard (held), decided: a login answer carrying one token in `response.token` and another in the
    /// `X-FM-Data-Access-Token` header is the body's (as documented); a token in the header of any other answer is
    /// never taken: the next calls keep the login's.
    @Test func onlyTheLoginsTokenIsKeptAndTheBodyComesFirst() async throws {
        let h = Harness { request in
            if isLogin(request) { return .json(200, Bodies.login("BODY"), headers: ["X-FM-Data-Access-Token": "HEADER"]) }
            return .json(200, Self.page(ids: [1], found: 1), headers: ["X-FM-Data-Access-Token": "OTHER"])
        }
        #expect(try await h.api.login() == "BODY")
        _ = try await h.api.getRecord(layout: "L", recordId: 1)
        _ = try await h.api.getRecord(layout: "L", recordId: 1)
        #expect(h.stub.requests.filter { !isLogin($0) }.map { $0.header("Authorization") } == ["Bearer BODY", "Bearer BODY"])
        #expect(h.store.load()?.token == "BODY")
    }

    /// Guard (held): a find walk (`pages(find:)`) over a server that ignores the window ends as the range walk does.
    @Test func aFindWalkOverAServerThatIgnoresTheWindowEnds() async {
        let h = Harness(store: Self.loggedIn) { _ in .json(200, Self.page(ids: [1, 2], found: 100)) }
        var records = 0
        do {
            for try await page in h.api.pages(layout: "L", find: FMFindRequest(queries: [FMQuery(["name": "n"])]), pageSize: 2) {
                records += page.records.count
            }
            Issue.record("the walk ended without an error")
        } catch {
            #expect((error as? FMError)?.code == FMError.ClientCode.malformedResponse)
        }
        #expect(records == 4)
        #expect(h.stub.requests.count == 3)
    }
}
