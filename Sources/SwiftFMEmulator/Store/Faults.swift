import Foundation

/// A failure the emulator plays instead of (or on top of) its normal answer, for testing clients.
///
/// Queue faults with ``Emulator/inject(_:count:matching:)``. Unless a case says otherwise the request
/// is *not* handled (nothing changes on the emulator) when its answer is replaced.
///
/// Faults about a session (``expireSession``, ``html401``, ``killSession``) are consumed only by a
/// request that carries a session token (a `Bearer` token, or the token in a logout path): a login,
/// which carries none, passes them by, so a client's re-login never spends them.
public enum EmulatorFault: Sendable, Equatable {
    /// Answer with this FileMaker error code and HTTP status (message defaults to FileMaker's text for the code).
    case fileMakerError(code: String, status: Int = 500, message: String? = nil)
    /// Handle the request normally, but the socket layer waits this many seconds before answering.
    case delay(TimeInterval)
    /// The normal answer, but the connection closes halfway through the body.
    case closeMidBody
    /// A 502 `text/html` page, as a web server answers when the Data API engine is off.
    case html502
    /// 200 with `application/json`, but the body is cut in the middle.
    case truncatedJSON
    /// The request's token expires just before the request is handled (so it answers 401/952).
    /// Consumed only by a request that carries a token.
    case expireSession
    /// Answer exactly this HTTP status and body (with this `Content-Type`, and a `Retry-After` header
    /// when `retryAfter` is given), e.g. a proxy's 503 or a FileMaker 812 envelope.
    case status(_ status: Int, body: String, contentType: String = "application/json", retryAfter: String? = nil)
    /// Handle the request (its effects stay), then reset the TCP connection (an RST) instead of
    /// sending any byte of the answer.
    case resetConnection
    /// Handle the request, send the status line and headers (with the full `Content-Length`) at once,
    /// then the body at `bytesPerSecond` (at least 1) until it is complete or the client goes away.
    /// Dripping never holds the emulator's lock nor delays other connections.
    case drip(bytesPerSecond: Int)
    /// Handle the request and answer its normal body gzip-compressed, with `Content-Encoding: gzip`.
    case gzip
    /// HTTP 401 with an HTML body, as FileMaker Cloud answers an expired token; the request's token
    /// becomes invalid. Consumed only by a request that carries a token.
    case html401
    /// The request's session is closed from the server while the request runs: the answer is HTTP 500
    /// with FileMaker code 112 "Window is missing" (WIRE.md §3.2, §12) and the token is gone afterwards.
    /// Consumed only by a request that carries a token.
    case killSession

    /// Whether only a request carrying a session token consumes this fault.
    var needsToken: Bool {
        switch self {
        case .expireSession, .html401, .killSession: return true
        default: return false
        }
    }
}

/// A queued fault: consumed `remaining` times by requests whose decoded path contains `matching`.
struct PendingFault: Sendable {
    var fault: EmulatorFault
    var remaining: Int
    var matching: String?
}

extension EmulatorState {
    /// Consumes one queued fault that applies to a request on `decodedPath` (one carrying a session
    /// token when `carriesToken`); faults that need a token are passed by otherwise.
    mutating func takeFault(for decodedPath: String, carriesToken: Bool) -> EmulatorFault? {
        guard let i = faults.firstIndex(where: { pending in
            (carriesToken || !pending.fault.needsToken) && (pending.matching.map { decodedPath.contains($0) } ?? true)
        }) else { return nil }
        let fault = faults[i].fault
        faults[i].remaining -= 1
        if faults[i].remaining <= 0 { faults.remove(at: i) }
        return fault
    }

    /// Plays `fault` for `request` (the lock is held by the caller): the answer, and any change it
    /// makes to the sessions. `token` is the session token the request carries.
    mutating func play(_ fault: EmulatorFault?, request: HTTPRequest, token: String?, now: Date) -> HTTPResponse {
        switch fault {
        case nil:
            return route(request, now: now)
        case let .fileMakerError(code, status, message):
            let error = FMError(code, message, status: status)
            if request.rawPath.lowercased().hasPrefix("/fmi/odata/") {
                // An OData request gets the fault in OData's error shape.
                return EmulatorState.odataError(ODataError(error.status, error.code, error.message))
            }
            return errorResponse(error)
        case .html502:
            return HTTPResponse(status: 502, headers: [("Content-Type", "text/html")],
                                body: Data("<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>".utf8))
        case .expireSession:
            if let token { sessions[token] = nil }
            return route(request, now: now)
        case let .delay(seconds):
            var response = route(request, now: now)
            response.delay = seconds
            return response
        case .closeMidBody:
            var response = route(request, now: now)
            response.delivery = .closeMidBody
            return response
        case .truncatedJSON:
            let full = route(request, now: now)
            let cut = max(1, full.body.count / 2)
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: Data(full.body.prefix(cut)))
        case let .status(status, body, contentType, retryAfter):
            var headers: [(name: String, value: String)] = [("Content-Type", contentType)]
            if let retryAfter { headers.append(("Retry-After", retryAfter)) }
            return HTTPResponse(status: status, headers: headers, body: Data(body.utf8))
        case .resetConnection:
            var response = route(request, now: now)
            response.delivery = .reset
            return response
        case let .drip(bytesPerSecond):
            var response = route(request, now: now)
            response.delivery = .drip(bytesPerSecond: max(1, bytesPerSecond))
            return response
        case .gzip:
            var response = route(request, now: now)
            response.body = Gzip.encode(response.body)
            response.headers.removeAll { $0.name.caseInsensitiveCompare("Content-Encoding") == .orderedSame }
            response.headers.append(("Content-Encoding", "gzip"))
            return response
        case .html401:
            if let token { sessions[token] = nil }
            return HTTPResponse(status: 401, headers: [("Content-Type", "text/html; charset=utf-8")],
                                body: Data("<html><head><title>401 Unauthorized</title></head><body><h1>401 Unauthorized</h1></body></html>".utf8))
        case .killSession:
            if let token { sessions[token] = nil }
            return errorResponse(FMError("112"))
        }
    }
}
