import Foundation

extension Emulator {
    /// The most rows one OData page holds before the answer carries `@odata.nextLink` (FileMaker
    /// Server: 10,000, the default). A client's `Prefer: odata.maxpagesize=N` lowers it per request.
    public var odataPageSize: Int {
        get { core.state.withLock { $0.odataMaxPageSize } }
        set { core.state.withLock { $0.odataMaxPageSize = max(1, newValue) } }
    }

    /// The version the OData `$metadata` reports (`<Annotation Term="ServerVersion" String="OData Engine …"/>`),
    /// `"22.0.4"` by default; clients such as fms-odata-py pick their features from it.
    public var odataServerVersion: String {
        get { core.state.withLock { $0.odataVersion } }
        set { core.state.withLock { $0.odataVersion = newValue } }
    }

    /// Reproduces FileMaker Server 22's container quirk: `GET …/{container}/$value` with
    /// `Accept: application/octet-stream` answers the stored file *name* as `text/plain` instead of the
    /// bytes. Off by default.
    public var odataOctetStreamQuirk: Bool {
        get { core.state.withLock { $0.odataOctetStreamQuirk } }
        set { core.state.withLock { $0.odataOctetStreamQuirk = newValue } }
    }
}

extension Emulator {
    /// Seconds between attempts to deliver an OData webhook its endpoint refused (a non-2xx answer or
    /// none); 1 by default. A webhook's `maxFailedAttempts` bounds the attempts (0: until delivered or
    /// the webhook is deleted).
    public var odataWebhookRetryInterval: TimeInterval {
        get { core.webhooks.retryInterval }
        set { core.webhooks.retryInterval = newValue }
    }
}

extension EmulatorCore {
    /// An OData request while Claris ID is on (FileMaker Cloud): `Authorization: Basic …` is refused with
    /// 401/212 in OData's shape (FileMaker Cloud's OData takes `FMID` only, ODATA.md §1.2); with
    /// `Authorization: FMID <token>`, a token the emulator's Cognito issued is accepted until it expires,
    /// then answered 401/212 in OData's shape. `nil` to route.
    func answerODataFMID(_ request: HTTPRequest, segments: [String]) -> HTTPResponse? {
        guard segments.count > 2, segments[1].lowercased() == "fmi", segments[2].lowercased() == "odata",
              let auth = request.header("Authorization").map(trimSpaces) else { return nil }
        let parts = auth.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, cognito.state.withLock({ $0.enabled }) else { return nil }
        if parts[0].lowercased() == "basic" {
            return EmulatorState.odataError(ODataError(401, "212", FMError.text(for: "212")))
        }
        guard parts[0].lowercased() == "fmid" else { return nil }
        let token = trimSpaces(String(parts[1]))
        let now = state.withLock { clock().addingTimeInterval($0.clockOffset) }
        switch cognito.verdict(forFMID: token, now: now) {
        case .accept:
            state.withLock { _ = $0.clarisIDTokens.insert(token) }
            return nil
        case .reject:
            state.withLock { _ = $0.clarisIDTokens.remove(token) }
            return EmulatorState.odataError(ODataError(401, "212", FMError.text(for: "212")))
        case .unknown:
            return nil
        }
    }
}
