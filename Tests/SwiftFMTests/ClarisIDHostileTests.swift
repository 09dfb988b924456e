import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import FMCrypto
@testable import SwiftFM

/// A Cognito on loopback that answers what a test chooses, per request (`InitiateAuth`, `RespondToAuthChallenge`).
enum HostileCognito {
    /// A PASSWORD_VERIFIER's parameters that the client can use (a B below N, never checked by anyone).
    static let verifier: [String: String] = [
        "SALT": "a1b2c3d4e5f60718", "SRP_B": String(repeating: "7", count: 768), "SECRET_BLOCK": "c2VjcmV0LWJsb2Nr",
        "USER_ID_FOR_SRP": "user-id-1", "USERNAME": "user-id-1",
    ]

    /// The JSON of a PASSWORD_VERIFIER challenge with `parameters` over ``verifier``'s (`nil` removes one).
    static func passwordVerifier(_ changes: [String: String?] = [:]) -> String {
        var parameters = verifier
        for (name, value) in changes { parameters[name] = value }
        return json(["ChallengeName": "PASSWORD_VERIFIER", "ChallengeParameters": parameters, "Session": "s1"])
    }

    /// A JWT whose payload is `claims` (JSON text), unsigned.
    static func jwt(_ claims: String) -> String {
        "eyJhbGciOiJub25lIn0." + Data(claims.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            + ".sig"
    }

    /// An AuthenticationResult with `idToken`.
    static func tokens(_ idToken: String, refreshToken: String? = "refresh-1", expiresIn: Any = 3600) -> String {
        var result: [String: Any] = ["IdToken": idToken, "ExpiresIn": expiresIn, "AccessToken": "access"]
        if let refreshToken { result["RefreshToken"] = refreshToken }
        return json(["AuthenticationResult": result])
    }

    static func json(_ object: Any) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
    }

    /// `InitiateAuth` or `RespondToAuthChallenge` (the `X-Amz-Target` of `head`), or `""`.
    static func target(_ head: String) -> String {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("x-amz-target:") {
            return line.split(separator: ".").last.map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
        }
        return ""
    }

    /// A server answering `answer(target, index)` (a JSON body, 200) or the raw answer it returns when it starts with `HTTP/`.
    static func server(_ answer: @escaping @Sendable (_ target: String, _ index: Int) -> String) -> HostileServer {
        HostileServer { head, index in
            let text = answer(target(head), index)
            return .answer(text.hasPrefix("HTTP/") ? text : HostileServer.json(text, headers: ["Content-Type": "application/x-amz-json-1.1"]))
        }
    }

    static func configuration(_ server: HostileServer) -> FMClarisIDConfiguration {
        FMClarisIDConfiguration(userPoolID: "us-west-2_HOSTILE", clientID: "client", cognitoURL: URL(string: server.url + "/") ?? URL(fileURLWithPath: "/"))
    }

    static func signIn(_ server: HostileServer, password: String = "Hostile-Pa55-word-0815", mfa: FMClarisIDMFAHandler? = nil,
                       store: (any FMTokenStore)? = nil, now: @escaping @Sendable () -> Date = { Date() }) -> ClarisIDSignIn {
        ClarisIDSignIn(username: "user@example.com", password: password, configuration: configuration(server), mfa: mfa,
                       refreshTokenStore: store, timeout: 600, now: now)
    }

    static func fetch(_ signIn: ClarisIDSignIn, refresh: Bool = false) async -> Result<String, FMError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<String, FMError>, Never>) in
            signIn.fetch(refresh: refresh) { continuation.resume(returning: $0) }
        }
    }
}

/// What a hostile or broken Cognito can put in its answers ends the sign-in with an
/// `FMError` (never a crash, a hang, unbounded work or a secret in a text). Transport-level hostility (redirects,
/// endless or dripping answers) is `ClarisIDTransportTests`'.
@Suite("Claris ID against a hostile Cognito (its answers)")
struct ClarisIDHostileTests {
    typealias C = HostileCognito

    /// An SRP_B as Cognito may send it, or not.
    struct B: Sendable, CustomTestStringConvertible {
        var name: String
        var hex: String?
        var usable: Bool
        var testDescription: String { name }
    }

    static let n = CognitoSRP.N.hex
    static let bs = [
        B(name: "0", hex: "0", usable: false), B(name: "N", hex: n, usable: false),
        B(name: "N+1", hex: (CognitoSRP.N + BigUInt(1)).hex, usable: false),
        B(name: "2N", hex: (CognitoSRP.N * BigUInt(2)).hex, usable: false),
        B(name: "a megabyte", hex: "1" + String(repeating: "0", count: 1_000_000), usable: false),
        B(name: "empty", hex: "", usable: false), B(name: "not hex", hex: "12g4", usable: false), B(name: "missing", hex: nil, usable: false),
        B(name: "leading zeros, odd length", hex: "000" + String(repeating: "7", count: 767), usable: true),
        B(name: "N-1", hex: (CognitoSRP.N - BigUInt(1)).hex, usable: true),
    ]

    /// SRP's safety check, and more: B must be in 1..<N, refused before any arithmetic (a megabyte of SRP_B cost
    /// seconds of CPU, and one above N was used); a usable one is answered with the claim.
    @Test(arguments: bs)
    func srpBOutsideOneToNIsRefusedBeforeAnyArithmetic(_ b: B) async {
        let server = C.server { target, _ in
            target == "InitiateAuth" ? C.passwordVerifier(["SRP_B": b.hex]) : C.tokens(C.jwt(#"{"exp":4102444800}"#))
        }
        defer { server.stop() }
        let result = await C.fetch(C.signIn(server))
        if b.usable {
            #expect(result.successValue == C.jwt(#"{"exp":4102444800}"#), "\(result)")
            #expect(server.count("RespondToAuthChallenge") == 1)
        } else {
            #expect(result.failureValue?.code == FMError.ClientCode.malformedResponse, "\(result)")
            #expect(server.count("RespondToAuthChallenge") == 0, "the claim went out")
        }
    }

    /// An AuthenticationResult as Cognito may send it, or not.
    struct Answer: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var refused: Bool
        var testDescription: String { name }
    }

    static let answers = [
        Answer(name: "no AuthenticationResult", body: #"{"ChallengeParameters":{}}"#, refused: true),
        Answer(name: "no IdToken", body: C.json(["AuthenticationResult": ["RefreshToken": "r"]]), refused: true),
        Answer(name: "a number for IdToken", body: C.json(["AuthenticationResult": ["IdToken": 12]]), refused: true),
        Answer(name: "an IdToken with CR LF", body: C.tokens("eyJ.a\r\nX-Injected: 1.sig"), refused: true),
        Answer(name: "an IdToken with a space", body: C.tokens("eyJ.a b.sig"), refused: true),
        Answer(name: "an IdToken with a NUL", body: C.tokens("eyJ.a\u{0}.sig"), refused: true),
        Answer(name: "JSON nested 10,000 deep", body: String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), refused: true),
        Answer(name: "a 200 with an error body", body: #"{"__type":"NotAuthorizedException","message":"no"}"#, refused: true),
        Answer(name: "an opaque IdToken, no RefreshToken, a string ExpiresIn", body: C.tokens("opaque-token", refreshToken: nil, expiresIn: "soon"),
               refused: false),
        Answer(name: "a JWT whose payload is not base64url", body: C.tokens("eyJ.%%%.sig"), refused: false),
        Answer(name: "a JWT whose payload is not JSON", body: C.tokens("eyJ.bm90IGpzb24.sig"), refused: false),
    ]

    /// The token the sign-in keeps must be one it can send: an ID token that cannot be an `Authorization` value is
    /// a malformed answer (-1007), not a token that fails every Data API login until its `exp` (-1002, never renewed).
    @Test(arguments: answers)
    func authenticationResultsAreCheckedBeforeUse(_ answer: Answer) async {
        let server = C.server { target, _ in target == "InitiateAuth" ? C.passwordVerifier() : answer.body }
        defer { server.stop() }
        let result = await C.fetch(C.signIn(server))
        if answer.refused {
            #expect(result.failureValue?.code == FMError.ClientCode.malformedResponse, "\(result)")
        } else {
            #expect(result.successValue != nil, "\(result)")
        }
        #expect(server.requests.count == 2)
    }

    /// Cognito's own text (an exception, its message, a challenge's name) reaches an `FMError` bounded, without
    /// control characters (no forged log lines), and without a secret the server chose to echo.
    @Test(arguments: ["an exception at refresh", "an unknown first challenge", "an unknown later challenge"])
    func cognitosTextInAnErrorIsBoundedPrintableAndFreeOfSecrets(_ where: String) async {
        let refreshToken = "refresh-token-SECRET-0815"
        let password = "Hostile-Pa55-word-0815"
        let junk = "\r\n[error] forged line \u{1B}[31m \(refreshToken) \(password) " + String(repeating: "x", count: 200_000)
        let server = C.server { target, _ in
            switch (`where`, target) {
            case ("an exception at refresh", _):
                let body = C.json(["__type": "com.amazonaws#InternalErrorException\r\n" + junk, "message": "boom" + junk])
                return "HTTP/1.1 500 Internal\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body
            case ("an unknown first challenge", _): return C.json(["ChallengeName": "WEIRD" + junk])
            case (_, "InitiateAuth"): return C.passwordVerifier()
            default: return C.json(["ChallengeName": "CUSTOM" + junk, "Session": "s"])
            }
        }
        defer { server.stop() }
        let store = FMMemoryTokenStore(FMStoredToken(token: refreshToken, expiry: Date().addingTimeInterval(3600)))
        let result = await C.fetch(C.signIn(server, password: password, store: `where` == "an exception at refresh" ? store : nil))
        let error = result.failureValue
        #expect(error != nil)
        let text = error.map { "\($0)" } ?? ""
        #expect(text.count < 2_000, "\(text.count) characters")
        #expect(!text.unicodeScalars.contains { $0.properties.generalCategory == .control }, "\(text.prefix(200))")
        // The password always; the refresh token where the sign-in holds one (the refresh case).
        #expect(!text.contains(password))
        #expect(`where` != "an exception at refresh" || !text.contains(refreshToken))
        #expect(text.contains("boom") || text.contains("WEIRD") || text.contains("CUSTOM"), "\(text.prefix(200))")
    }

    /// A PASSWORD_VERIFIER as Cognito may send it, or not.
    struct Verifier: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var usable: Bool
        var testDescription: String { name }
    }

    static let verifiers = [
        Verifier(name: "SALT empty", body: C.passwordVerifier(["SALT": ""]), usable: false),
        Verifier(name: "SALT not hex", body: C.passwordVerifier(["SALT": "0x12"]), usable: false),
        Verifier(name: "SALT of 600,000 digits", body: C.passwordVerifier(["SALT": String(repeating: "f", count: 600_000)]), usable: true),
        Verifier(name: "SECRET_BLOCK not base64", body: C.passwordVerifier(["SECRET_BLOCK": "not base64!"]), usable: false),
        Verifier(name: "SECRET_BLOCK of 700 KB", body: C.passwordVerifier(["SECRET_BLOCK": Data(count: 525_000).base64EncodedString()]), usable: true),
        Verifier(name: "USER_ID_FOR_SRP missing", body: C.passwordVerifier(["USER_ID_FOR_SRP": nil]), usable: false),
        Verifier(name: "USER_ID_FOR_SRP empty", body: C.passwordVerifier(["USER_ID_FOR_SRP": ""]), usable: false),
        Verifier(name: "USER_ID_FOR_SRP huge, with control characters",
                 body: C.passwordVerifier(["USER_ID_FOR_SRP": "id\u{0}\r\n\u{1B}" + String(repeating: "u", count: 300_000)]), usable: true),
        Verifier(name: "a Session of 900 KB", body: C.json(["ChallengeName": "PASSWORD_VERIFIER", "ChallengeParameters": C.verifier,
                                                            "Session": String(repeating: "s", count: 900_000)]), usable: true),
        Verifier(name: "NEW_PASSWORD_REQUIRED first", body: C.json(["ChallengeName": "NEW_PASSWORD_REQUIRED"]), usable: false),
    ]

    /// A PASSWORD_VERIFIER whose parameters are missing or unreadable ends the sign-in with -1007 before the claim;
    /// huge or odd ones that can be used cost linear work and are answered.
    @Test(arguments: verifiers)
    func passwordVerifierParameters(_ verifier: Verifier) async {
        let token = C.jwt(#"{"exp":4102444800}"#)
        let server = C.server { target, _ in target == "InitiateAuth" ? verifier.body : C.tokens(token) }
        defer { server.stop() }
        let result = await C.fetch(C.signIn(server))
        #expect(verifier.usable ? result.successValue == token : result.failureValue?.code == FMError.ClientCode.malformedResponse,
                "\(String(describing: result).prefix(300))")
        #expect(server.count("RespondToAuthChallenge") == (verifier.usable ? 1 : 0))
    }

    /// A challenge answered with another one, for ever, ends after three answers (-1007), the handler asked three times.
    @Test func aChallengeAnsweredWithAnotherEndsAfterThree() async {
        let server = C.server { target, _ in
            target == "InitiateAuth" ? C.passwordVerifier() : C.json(["ChallengeName": "SOFTWARE_TOKEN_MFA", "Session": "again"])
        }
        defer { server.stop() }
        let asked = Locked(0)
        let result = await C.fetch(C.signIn(server, mfa: { _ in asked.withLock { $0 += 1 }; return "123456" }))
        #expect(result.failureValue?.code == FMError.ClientCode.malformedResponse, "\(result)")
        #expect(asked.withLock { $0 } == 3)
        #expect(server.requests.count == 5)   // InitiateAuth, PASSWORD_VERIFIER, three MFA answers
    }

    /// Two hundred calls while a hostile sign-in runs share it (one request), and each completes once, with its error.
    @Test func manyCallersShareOneHostileSignInAndEachCompletes() async {
        let release = DispatchSemaphore(value: 0)
        let server = C.server { _, _ in
            _ = release.wait(timeout: TestBound.deadline)
            return C.json(["ChallengeName": "PASSWORD_VERIFIER"])   // no parameters
        }
        defer { server.stop() }
        let signIn = C.signIn(server)
        let callers = 200
        let results = Locked([Result<String, FMError>]())
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = Once()
            for index in 0..<callers {
                signIn.fetch(refresh: index % 2 == 1) { result in
                    let count = results.withLock { $0.append(result); return $0.count }
                    if count == callers, done.claim() { continuation.resume() }
                }
            }
            release.signal()
            // A hang guard only: the test then fails on the count.
            DispatchQueue.global().asyncAfter(deadline: TestBound.deadline) { if done.claim() { continuation.resume() } }
        }
        let all = results.withLock { $0 }
        #expect(all.count == callers)
        #expect(all.allSatisfy { $0.failureValue?.code == FMError.ClientCode.malformedResponse })
        #expect(server.requests.count == 1)
        #expect(signIn.counts == (0, 0))
    }

    /// An `exp` claim or `ExpiresIn` of any value: no trap, and no spin — a token past its time is reused for 30 s and
    /// then costs one renewal per fetch, one far in the future is kept until a rejection asks for a new one.
    @Test(arguments: [
        (#"{"exp":1e308}"#, 3600.0 as Double?, true), (#"{"exp":-1e308}"#, 3600, false), (#"{"exp":1e400}"#, nil, true),
        (#"{"exp":"4102444800"}"#, -1e308, false), (#"{"exp":18446744073709551616}"#, 3600, true), (#"{"exp":-5}"#, 1e308, false),
        (#"{}"#, 1e308, true), (#"{"exp":true}"#, 3600, false), (#"{"exp":null}"#, 0, false),
    ])
    func hostileExpiryNeitherTrapsNorSpins(_ claims: String, _ expiresIn: Double?, _ kept: Bool) async {
        let token = C.jwt(claims)
        let server = C.server { _, index in index == 0 ? C.passwordVerifier() : C.tokens(token, expiresIn: expiresIn ?? "none") }
        defer { server.stop() }
        let clock = ClarisIDExpiryTests.SkewedClock(offset: 0)
        let signIn = C.signIn(server, now: clock.now)
        for (refresh, later) in [(false, 0.0), (false, 0), (false, 31), (true, 0)] {
            clock.advance(later)
            let result = await C.fetch(signIn, refresh: refresh)
            #expect(result.successValue == token, "\(result)")
        }
        // SRP (two requests); the second fetch reuses it (within 30 s); 31 s later the third renews unless kept;
        // then the rejection's refresh.
        #expect(server.requests.count == (kept ? 3 : 4))
        #expect(signIn.counts == (1, kept ? 1 : 2))
    }

    /// A Cognito exchange that ended lets go of its transfer (its task, the answer it gathered) at once: its timer
    /// is cancelled, not left to hold them for the rest of the timeout (600 s here).
    @Test func anEndedExchangeLetsGoOfItsTransferAtOnce() async throws {
        let released = DispatchSemaphore(value: 0)
        let signIn = ClarisIDSignIn(username: "user@example.com", password: "Pa55-word", configuration: FMClarisIDConfiguration(
            userPoolID: "us-west-2_HOSTILE", clientID: "client", cognitoURL: URL(fileURLWithPath: "/")), mfa: nil,
            refreshTokenStore: nil, timeout: 600, transport: RefusingCognito(released: released))
        let result = await C.fetch(signIn)
        #expect(result.failureValue?.code == "-1013", "\(result)")
        // Waited for on a thread of its own (the async test's thread must not block).
        let freed = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: released.wait(timeout: TestBound.deadline) == .success) }
        }
        #expect(freed, "the transfer is still held after the exchange ended")
    }
}

/// A transport answering every request at once with Cognito's 400 `NotAuthorizedException`; its task signals
/// `released` when it is freed. It keeps no reference to anything once it has answered.
private struct RefusingCognito: FMTransport {
    final class Task: FMTransportTask {
        let released: DispatchSemaphore
        init(released: DispatchSemaphore) { self.released = released }
        func cancel() {}
        deinit { released.signal() }
    }

    let released: DispatchSemaphore

    func send(_ request: FMTransportRequest, events: FMTransportEvents) -> any FMTransportTask {
        let url = request.urlRequest.url ?? URL(fileURLWithPath: "/")
        DispatchQueue.global().async {
            let response = HTTPURLResponse(url: url, statusCode: 400, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Type": "application/x-amz-json-1.1"])
            if let response, events.response(response) {
                _ = events.data(Data(#"{"__type":"NotAuthorizedException","message":"Incorrect username or password."}"#.utf8))
            }
            events.complete(nil)
        }
        return Task(released: released)
    }
}

extension Result {
    var successValue: Success? { if case .success(let value) = self { value } else { nil } }
    var failureValue: Failure? { if case .failure(let error) = self { error } else { nil } }
}
