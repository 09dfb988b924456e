import Foundation

/// A failure the emulator plays instead of (or on top of) its normal answer, for testing clients.
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
    case expireSession
}

/// A queued fault: consumed `remaining` times by requests whose decoded path contains `matching`.
struct PendingFault: Sendable {
    var fault: EmulatorFault
    var remaining: Int
    var matching: String?
}
