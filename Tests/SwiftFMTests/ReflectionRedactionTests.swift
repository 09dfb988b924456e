import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

/// No secret through reflection. For each type that holds a password, a Basic value, a token or
/// a data-source password: `dump`, the children of `Mirror(reflecting:)` (recursively), `String(reflecting:)`,
/// `description` and `debugDescription` never show it.
@Suite("No secret through reflection")
struct ReflectionRedactionTests {
    static let password = "pw-SECRET-1"
    static let sourcePassword = "ds-SECRET-2"
    static let token = "tok-SECRET-3"
    static let idToken = "fmid-SECRET-4"
    static let oauthId = "oauth-SECRET-5"
    static let oauthIdentifier = "oauthident-SECRET-6"
    static var basic: String { Data("admin:\(password)".utf8).base64EncodedString() }
    static var secrets: [String] { [password, sourcePassword, token, idToken, oauthId, oauthIdentifier, basic] }

    /// Every textual view of `subject`.
    static func views(of subject: Any) -> [String: String] {
        var dumped = ""
        dump(subject, to: &dumped)
        var views = ["dump": dumped, "String(reflecting:)": String(reflecting: subject), "String(describing:)": String(describing: subject),
                     "Mirror": mirrorText(Mirror(reflecting: subject), depth: 0)]
        if let described = subject as? CustomStringConvertible { views["description"] = described.description }
        if let debug = subject as? CustomDebugStringConvertible { views["debugDescription"] = debug.debugDescription }
        return views
    }

    /// The labels and values of a mirror's children, recursively (a few levels).
    static func mirrorText(_ mirror: Mirror, depth: Int) -> String {
        guard depth < 6 else { return "" }
        var text = ""
        for child in mirror.children {
            text += "\(child.label ?? "_")=\(String(describing: child.value));"
            text += mirrorText(Mirror(reflecting: child.value), depth: depth + 1)
        }
        if let parent = mirror.superclassMirror { text += mirrorText(parent, depth: depth + 1) }
        return text
    }

    func expectNoSecret(_ subject: Any, sourceLocation: SourceLocation = #_sourceLocation) {
        for (view, text) in Self.views(of: subject) {
            for secret in Self.secrets {
                #expect(!text.contains(secret), "\(view) shows a secret: \(text)", sourceLocation: sourceLocation)
            }
            #expect(!text.isEmpty, "\(view) is empty", sourceLocation: sourceLocation)
        }
    }

    static let dataSource = FMDataSource(database: "Other", username: "ds-user", password: sourcePassword)
    static let provider = FMClarisIDTokenProvider(token: idToken)
    static let allCredentials: [FMCredentials] = [
        .basic(username: "admin", password: password), .encoded(basic), .clarisID(provider),
        .oauth(requestId: oauthId, identifier: oauthIdentifier),
    ]

    @Test(arguments: allCredentials)
    func credentials(_ credentials: FMCredentials) {
        expectNoSecret(credentials)
        expectNoSecret(Optional(credentials) as Any)
        expectNoSecret([credentials])
    }

    @Test func dataSource() {
        expectNoSecret(Self.dataSource)
        expectNoSecret([Self.dataSource])
    }

    @Test func clarisIDTokenProvider() {
        expectNoSecret(Self.provider)
        expectNoSecret(FMClarisIDTokenProvider { _, done in done(.success(Self.idToken)) })
    }

    @Test(arguments: allCredentials)
    func configuration(_ credentials: FMCredentials) {
        var configuration = FMConfiguration(host: "fms.example.com", database: "DB", credentials: credentials,
                                            dataSources: [Self.dataSource])
        configuration.retry = FMRetryPolicy(maxAttempts: 5, retriesWrites: true)
        configuration.maxConcurrentRequests = 4
        expectNoSecret(configuration)
    }

    @Test func storedToken() {
        expectNoSecret(FMStoredToken(token: Self.token, expiry: Date()))
    }

    @Test func memoryTokenStore() {
        expectNoSecret(FMMemoryTokenStore(FMStoredToken(token: Self.token, expiry: Date())))
    }

    @Test func userDefaultsTokenStore() throws {
        let suite = "SwiftFMTests.\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let store = FMUserDefaultsTokenStore(defaults: defaults)
        store.save(FMStoredToken(token: Self.token, expiry: Date()))
        expectNoSecret(store)
    }

    @Test func fileTokenStore() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFMTests-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        let store = FMFileTokenStore(url: url)
        store.save(FMStoredToken(token: Self.token, expiry: Date()))
        expectNoSecret(store)
    }

    @Test(arguments: allCredentials)
    func dataAPIWithALiveToken(_ credentials: FMCredentials) {
        let configuration = FMConfiguration(host: "fms.example.com", database: "DB", credentials: credentials,
                                            dataSources: [Self.dataSource])
        let store = FMMemoryTokenStore(FMStoredToken(token: Self.token, expiry: Date().addingTimeInterval(600)))
        let api = DataAPI(configuration: configuration, transport: StubTransport(), tokenStore: store)
        #expect(api.currentToken == Self.token, "the token is live")
        expectNoSecret(api)
        expectNoSecret(FMNewSession(api: DataAPI(pinnedTo: Self.token, parent: api), poolIndex: 0))
    }

    @Test func dataAPIAfterALogin() {
        let harness = Harness(configuration: FMConfiguration(host: "fms.example.com", database: "DB",
                                                             username: "admin", password: Self.password,
                                                             dataSources: [Self.dataSource])) { request in
            isLogin(request) ? .json(200, Bodies.login(Self.token)) : .json(200, Bodies.ok)
        }
        let recorder = Recorder<(String?, String)>()
        harness.api.login { recorder.record(($0, $1)) }
        #expect(recorder.wait().first?.1 == "0")
        #expect(harness.api.currentToken == Self.token)
        expectNoSecret(harness.api)
    }

    /// What a custom ``FMTransport`` is handed: the request carries the `Authorization` value and, at login,
    /// the data-source passwords; printing or dumping it must not show them.
    @Test func transportRequest() throws {
        var login = URLRequest(url: try #require(URL(string: "https://fms.example.com/fmi/data/vLatest/databases/DB/sessions")))
        login.httpMethod = "POST"
        login.setValue("Basic " + Self.basic, forHTTPHeaderField: "Authorization")
        login.httpBody = Data(#"{"fmDataSource":[{"database":"Other","username":"ds-user","password":"\#(Self.sourcePassword)"}]}"#.utf8)
        expectNoSecret(FMTransportRequest(urlRequest: login))
        var call = URLRequest(url: try #require(URL(string: "https://fms.example.com/fmi/data/vLatest/databases/DB/sessions/\(Self.token)")))
        call.httpMethod = "DELETE"
        call.setValue("Bearer " + Self.token, forHTTPHeaderField: "Authorization")
        expectNoSecret(FMTransportRequest(urlRequest: call))
    }
}
