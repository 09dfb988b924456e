import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Requests are built as the Data API expects them: host, scheme and port, the encoded database, queries, bodies and
// headers, logins with data sources, logouts with the token in the path; a bad host or no database is -1001.

@Suite("Request building")
struct RequestBuilderTests {
    let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")

    func build<V>(_ endpoint: Endpoint<V>, _ configuration: FMConfiguration? = nil, auth: String? = nil) throws -> URLRequest {
        try RequestBuilder.request(for: endpoint, configuration: configuration ?? self.configuration, authorization: auth).get()
    }

    func endpoint(_ segments: [String], query: [URLQueryItem] = [], scope: Endpoint<Void>.Scope = .database) -> Endpoint<Void> {
        Endpoint(.get, scope, segments, query: query) { _ in }
    }

    @Test func bareHostMeansHTTPS() throws {
        let request = try build(endpoint(["layouts", "People", "records"]))
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/databases/Contacts/layouts/People/records")
        #expect(request.httpMethod == "GET")
    }

    @Test func explicitSchemeAndPort() throws {
        var configuration = self.configuration
        configuration.host = "http://127.0.0.1:3000"
        configuration.version = .v1
        let request = try build(endpoint(["productInfo"], scope: .host), configuration)
        #expect(request.url?.absoluteString == "http://127.0.0.1:3000/fmi/data/v1/productInfo")
        configuration.host = "fms.example.com:8443"
        configuration.version = .v2
        #expect(try build(endpoint(["databases"], scope: .host), configuration).url?.absoluteString
            == "https://fms.example.com:8443/fmi/data/v2/databases")
        configuration.host = "https://proxy.example.com/prefix/"
        let prefixed = try build(endpoint(["scripts"]), configuration).url?.absoluteString
        #expect(prefixed
            == "https://proxy.example.com/prefix/fmi/data/v2/databases/Contacts/scripts")
    }

    @Test(arguments: ["", "   ", "ftp://fms.example.com", "http://", "https://user:pw@host", "http://exa mple.com"])
    func invalidHostIsMinus1001(host: String) {
        var configuration = self.configuration
        configuration.host = host
        let result = RequestBuilder.request(for: endpoint(["layouts"]), configuration: configuration, authorization: nil)
        #expect(result.testFailureCode == "-1001")
    }

    @Test func missingDatabaseIsMinus1001() {
        var configuration = self.configuration
        configuration.database = ""
        #expect(RequestBuilder.request(for: endpoint(["layouts"]), configuration: configuration, authorization: nil).testFailureCode == "-1001")
        // Host-level endpoints do not need a database.
        #expect(RequestBuilder.request(for: endpoint(["productInfo"], scope: .host), configuration: configuration, authorization: nil).testFailureCode == nil)
    }

    @Test(arguments: [
        ("../sessions", "..%2Fsessions"),
        ("a/b?c#d", "a%2Fb%3Fc%23d"),
        ("My Layout", "My%20Layout"),
        ("100%", "100%25"),
        ("a+b&c=d;e", "a%2Bb%26c%3Dd%3Be"),
        ("Ünïcødé", "%C3%9Cn%C3%AFc%C3%B8d%C3%A9"),
        ("顧客", "%E9%A1%A7%E5%AE%A2"),
        ("🙂", "%F0%9F%99%82"),
        ("safe-_.~AZaz09", "safe-_.~AZaz09"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("...", "%2E%2E%2E"),
        ("a..b", "a..b"),
    ])
    func segmentsArePercentEncoded(raw: String, encoded: String) throws {
        let request = try build(endpoint(["layouts", raw, "records"]))
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/databases/Contacts/layouts/\(encoded)/records")
        // The URL keeps exactly the segments we built: nothing was reinterpreted as a path, query or fragment.
        #expect(request.url?.query == nil)
        #expect(request.url?.fragment == nil)
        let parts = (URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "").split(separator: "/")
        #expect(parts.count == 8)
        #expect(parts[6].removingPercentEncoding == raw)
    }

    @Test func databaseNameIsEncoded() throws {
        var configuration = self.configuration
        configuration.database = "My DB/../x"
        let request = try build(endpoint(["layouts"]), configuration)
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/databases/My%20DB%2F..%2Fx/layouts")
    }

    @Test func queryNamesAndValuesAreEncoded() throws {
        let sort = #"[{"fieldName":"Last Name","sortOrder":"ascend"}]"#
        let request = try build(endpoint(["layouts", "L", "records"], query: [
            URLQueryItem(name: "_offset", value: "1"),
            URLQueryItem(name: "_sort", value: sort),
            URLQueryItem(name: "script.param", value: "a+b c&d=e?f#g%"),
            URLQueryItem(name: "portal", value: #"["Portal 1","Other"]"#),
            URLQueryItem(name: "flag", value: nil),
        ]))
        let query = try #require(request.url?.query)
        #expect(query == "_offset=1"
            + "&_sort=%5B%7B%22fieldName%22%3A%22Last%20Name%22%2C%22sortOrder%22%3A%22ascend%22%7D%5D"
            + "&script.param=a%2Bb%20c%26d%3De%3Ff%23g%25"
            + "&portal=%5B%22Portal%201%22%2C%22Other%22%5D"
            + "&flag")
        // Round trip: a server decoding the query gets the exact values back.
        let items = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
        #expect(items.first { $0.name == "_sort" }?.value == sort)
        #expect(items.first { $0.name == "script.param" }?.value == "a+b c&d=e?f#g%")
    }

    @Test func jsonBodyHeaders() throws {
        let body = Data(#"{"fieldData":{"a":1}}"#.utf8)
        let endpoint = Endpoint<Void>(.post, .database, ["layouts", "L", "records"], body: .json(body)) { _ in }
        let request = try build(endpoint, auth: "Bearer tok")
        #expect(request.httpMethod == "POST")
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.header("Authorization") == "Bearer tok")
        #expect(request.httpBody == body)
        #expect(request.timeoutInterval == 35)   // the transport's idle timeout: the deadline + 5 s
    }

    @Test("An endpoint's own headers go out with the call's; a name set again in another case replaces the value under its first spelling")
    func endpointHeadersAndOneValuePerName() throws {
        var endpoint = Endpoint<Void>(.post, .database, ["layouts", "L", "records"], body: .json(Data("{}".utf8))) { _ in }
        endpoint.headers = ["Cookie": "X-FMS-Session-Key=abc", "content-type": "text/plain", "AUTHORIZATION": "Basic old"]
        let request = try build(endpoint, auth: "Bearer tok")
        let fields = request.allHTTPHeaderFields ?? [:]
        #expect(fields == ["Cookie": "X-FMS-Session-Key=abc", "content-type": "application/json", "AUTHORIZATION": "Bearer tok"])
        var table = RequestBuilder.HeaderTable()
        table.set("1", for: "X-One")
        table.set("2", for: "x-one")
        table.set("3", for: "X-Two")
        #expect(table.fields == ["X-One": "2", "X-Two": "3"])
    }

    @Test func multipartHeaders() throws {
        let endpoint = Endpoint<Void>(.post, .database, ["layouts", "L", "records", "1", "containers", "Photo", "1"],
                                      body: .multipart(Data("x".utf8), boundary: "B0UNDARY")) { _ in }
        let request = try build(endpoint, auth: "Bearer tok")
        #expect(request.header("Content-Type") == "multipart/form-data; boundary=B0UNDARY")
        #expect(request.httpBody == Data("x".utf8))
    }

    @Test func bodilessRequestHasNoContentTypeAndTimeoutFromConfiguration() throws {
        var configuration = self.configuration
        configuration.timeout = 7
        let request = try build(Endpoint<Void>(.delete, .database, ["layouts", "L", "records", "3"]) { _ in }, configuration)
        #expect(request.header("Content-Type") == nil)
        #expect(request.header("Authorization") == nil)
        #expect(request.httpBody == nil)
        #expect(request.timeoutInterval == 12)   // from the configuration, as the transport reads it: 7 + 5 s
        #expect(request.httpMethod == "DELETE")
    }

    @Test func loginRequest() throws {
        let request = try build(SessionEndpoints.login(dataSources: []), auth: "Basic \(basicValue("admin", "pw"))")
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/databases/Contacts/sessions")
        #expect(request.httpMethod == "POST")
        #expect(request.header("Authorization") == "Basic YWRtaW46cHc=")
        #expect(request.header("Content-Type") == "application/json")
        #expect(String(decoding: request.httpBody ?? Data(), as: UTF8.self) == "{}")
    }

    @Test func loginBodyWithDataSources() throws {
        let body = try SessionEndpoints.loginBody([
            FMDataSource(database: "Other", username: "u", password: "p/\"q"),
            FMDataSource(database: "Third", username: "v", password: "w"),
        ])
        #expect(String(decoding: body, as: UTF8.self)
            == #"{"fmDataSource":[{"database":"Other","password":"p/\"q","username":"u"},{"database":"Third","password":"w","username":"v"}]}"#)
    }

    @Test func logoutRequestHasTokenInPathAndNoHeaders() throws {
        let request = try build(SessionEndpoints.logout(token: "tok en/1"))
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/databases/Contacts/sessions/tok%20en%2F1")
        #expect(request.httpMethod == "DELETE")
        #expect(request.header("Authorization") == nil)
        #expect(request.header("Content-Type") == nil)
    }

    @Test func validateSessionIsHostLevel() throws {
        let request = try build(SessionEndpoints.validate(token: "t"), auth: "Bearer t")
        #expect(request.url?.absoluteString == "https://fms.example.com/fmi/data/vLatest/validateSession")
    }

    @Test func absoluteScopeKeepsURLAndAddsQuery() throws {
        let url = URL(string: "https://fms.example.com/Streaming_SSL/MainDB/ABC.jpg?RCType=EmbeddedRCFileProcessor")!
        let request = try build(Endpoint<Void>(.get, .absolute(url), ["ignored"], query: [URLQueryItem(name: "a", value: "b c")], auth: .none) { _ in })
        #expect(request.url?.absoluteString == "https://fms.example.com/Streaming_SSL/MainDB/ABC.jpg?RCType=EmbeddedRCFileProcessor&a=b%20c")
        let bad = URL(string: "file:///etc/passwd")!
        #expect(RequestBuilder.request(for: Endpoint<Void>(.get, .absolute(bad), []) { _ in }, configuration: configuration, authorization: nil).testFailureCode == "-1002")
    }

    @Test func encodeHelper() {
        #expect(RequestBuilder.encode("a b/c?d#e%f+g") == "a%20b%2Fc%3Fd%23e%25f%2Bg")
        #expect(RequestBuilder.encode("") == "")
    }
}
