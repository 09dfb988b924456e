import Foundation

/// The three session endpoints (E3 login, E4 logout, E5 validate), described once.
enum SessionEndpoints {
    /// `POST …/databases/{db}/sessions` with Basic auth and the body `{}` or `{"fmDataSource":[…]}`.
    /// Decodes the token from `response.token`, else from the `X-FM-Data-Access-Token` header; none → `-1010`;
    /// one that cannot be sent back as a `Bearer` value (a space, CR, LF, a control character) or is longer than
    /// ``RequestBuilder/maxSessionTokenBytes`` → `-1007`.
    static func login(encoded: String? = nil, dataSources: [FMDataSource]) -> Endpoint<String> {
        var invalid: FMError?
        let body: Data
        do {
            body = try loginBody(dataSources)
        } catch {
            body = Data()
            invalid = .invalidArgument("The fmDataSource list cannot be encoded")
        }
        return Endpoint(.post, .database, ["sessions"], body: .json(body), auth: .basic(encoded: encoded), invalid: invalid) { response in
            let found = (try? Envelope.response(from: response.body, status: response.status)["token"] as? String).flatMap { $0.isEmpty ? nil : $0 }
                ?? response.header("X-FM-Data-Access-Token").flatMap { $0.isEmpty ? nil : $0 }
            if let token = found {
                guard RequestBuilder.isValidToken(token) else {
                    throw FMError.malformed("the login token holds characters a Bearer token cannot carry", status: response.status)
                }
                guard RequestBuilder.isValidSessionToken(token) else {
                    throw FMError.malformed("the login token is \(token.utf8.count) bytes long, more than a Data API token may be "
                                            + "(\(RequestBuilder.maxSessionTokenBytes))", status: response.status)
                }
                return token
            }
            // Report a FileMaker error or an unreadable body as such; a well-formed answer without a token is -1010.
            _ = try Envelope.response(from: response.body, status: response.status)
            throw FMError.noToken
        }
    }

    /// The login body: `{}`, or `{"fmDataSource":[{"database":…,"password":…,"username":…}]}` (keys sorted).
    static func loginBody(_ dataSources: [FMDataSource]) throws -> Data {
        guard !dataSources.isEmpty else { return Data("{}".utf8) }
        let list = dataSources.map { ["database": $0.database, "username": $0.username, "password": $0.password] }
        return try JSONSerialization.data(withJSONObject: ["fmDataSource": list], options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// `DELETE …/databases/{db}/sessions/{token}`: no Authorization header, no body.
    static func logout(token: String) -> Endpoint<Bool> {
        Endpoint(.delete, .database, ["sessions", token], auth: .none) { response in
            _ = try Envelope.response(from: response.body, status: response.status)
            return true
        }
    }

    /// The logout SwiftFM sends on its own (a shutdown's, an idle session's, a session let go): ``logout(token:)``, also
    /// done when the server answers 952 (with HTTP 401), as it does for a session it no longer knows (restarted,
    /// expired): that session is closed, as asked. Sent with ``closeAccepting`` so the 401 reaches this decoder.
    static func close(token: String) -> Endpoint<Bool> {
        Endpoint(.delete, .database, ["sessions", token], auth: .none) { response in
            do {
                _ = try Envelope.response(from: response.body, status: response.status)
            } catch let error as FMError where response.status == 401 && error.code == "952" {
                return true
            }
            return true
        }
    }

    /// The statuses ``close(token:)`` reads: 200, and 401 (FileMaker's 952).
    static let closeAccepting: @Sendable (Int) -> Bool = { $0 == 200 || $0 == 401 }

    /// `GET /fmi/data/{version}/validateSession` with `Bearer token`.
    static func validate(token: String) -> Endpoint<Bool> {
        Endpoint(.get, .host, ["validateSession"], auth: .token(token)) { response in
            _ = try Envelope.response(from: response.body, status: response.status)
            return true
        }
    }
}
