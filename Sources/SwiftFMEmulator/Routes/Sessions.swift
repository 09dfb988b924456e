import Foundation

extension EmulatorState {
    /// E3: `POST /databases/{db}/sessions`.
    mutating func login(_ ctx: inout RequestContext) throws -> Reply {
        if let sources = ctx.body["fmDataSource"] {
            guard let items = sources.arrayValue, items.allSatisfy({ $0.objectPairs != nil }) else { throw FMError("1708") }
        }
        let req = ctx.request
        var account: String?
        if let auth = req.header("Authorization")?.trimmingCharacters(in: .whitespaces), !auth.isEmpty {
            let parts = auth.split(separator: " ", maxSplits: 1)
            let scheme = parts.first.map { $0.lowercased() } ?? ""
            if scheme == "basic", parts.count == 2 {
                guard let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
                      let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
                    throw FMError("212", "Authorization header 'Basic' invalid")
                }
                let user = String(text[..<colon]), password = String(text[text.index(after: colon)...])
                guard let match = schema.accounts.first(where: {
                    $0.username.caseInsensitiveCompare(user) == .orderedSame && $0.password == password
                }) else { throw FMError("212") }
                account = match.username
            } else if scheme == "fmid", parts.count == 2 {
                // Claris ID (FileMaker Cloud): the token must have been accepted and not revoked.
                guard admitsClarisIDToken(trimSpaces(String(parts[1])), now: ctx.now) else { throw FMError("212") }
                account = "fmid"
            } else {
                throw FMError("212", "Authorization header '\(parts.first.map(String.init) ?? "")' invalid")
            }
        } else if let requestId = req.header("X-FM-Data-OAuth-Request-Id"), let identifier = req.header("X-FM-Data-OAuth-Identifier") {
            guard oauthPairs.contains(EmulatorState.oauthKey(requestId: trimSpaces(requestId), identifier: trimSpaces(identifier))) else {
                throw FMError("212")
            }
            account = "oauth"
        }
        guard let account else { throw FMError("10") }
        if rejectLogins { throw FMError("212") }
        purgeExpired(now: ctx.now)
        if let maxSessions, sessions.count >= maxSessions { throw FMError("956") }
        let token = EmulatorState.newToken()
        sessions[token] = Session(token: token, database: ctx.database, account: account, lastUsed: ctx.now)
        issuedTokens.insert(token)
        loginCount += 1
        return Reply(response: .object([("token", .string(token))]), headers: [("X-FM-Data-Access-Token", token)])
    }

    /// The key of an accepted OAuth pair in ``oauthPairs``.
    static func oauthKey(requestId: String, identifier: String) -> String { "\(requestId)\n\(identifier)" }

    /// 52 lower-case hex characters.
    static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<26).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }

    /// E4: `DELETE /databases/{db}/sessions/{token}` (no Authorization needed).
    mutating func logout(token: String, _ ctx: inout RequestContext) throws -> Reply {
        guard let s = sessions[token], !isExpired(s, now: ctx.now) else {
            sessions[token] = nil
            throw FMError("952")
        }
        // Another database spelling: the token is invalid *for this request* only; the session lives on.
        guard s.database == ctx.database else { throw FMError("952") }
        sessions[token] = nil
        logoutCount += 1
        return Reply(response: .object([]))
    }

    /// E5: `GET /validateSession`.
    mutating func validateSession(_ ctx: inout RequestContext) throws -> Reply {
        let token = try bearerToken(ctx, missingMessage: "Request validation failed: Parameter (Authorization) is required")
        guard var s = sessions[token], !isExpired(s, now: ctx.now) else { throw FMError("952") }
        s.lastUsed = ctx.now
        sessions[token] = s
        return Reply(response: .object([("isSessionInUse", .bool(false))]))
    }
}
