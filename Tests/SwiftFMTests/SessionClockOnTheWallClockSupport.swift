import Foundation
@testable import SwiftFM

// The session stage's clocks given a wall clock alone, as the tests have always injected one: the elapsed clock a
// session's idle time is measured on follows the wall clock (``SessionClock``), so moving the wall clock drives expiry.

extension SessionStage {
    /// A stage whose clocks both follow `now`.
    convenience init(pool: SessionPool, tokenStore: FMTokenStore, configuration: FMConfiguration, logger: Logger, lifecycle: Lifecycle,
                     queue: DispatchQueue = DispatchQueue(label: "SwiftFM.DataAPI.sessions"), now: @escaping @Sendable () -> Date,
                     pinnedAPI: PinnedAPI? = nil, send: @escaping Send) {
        self.init(pool: pool, tokenStore: tokenStore, configuration: configuration, logger: logger, lifecycle: lifecycle, queue: queue,
                  clock: SessionClock(wall: now, elapsed: nil), pinnedAPI: pinnedAPI, send: send)
    }
}

extension DataAPI {
    /// The default transport's client on a wall clock alone, libcurl loaded from `curlLibraryPath`.
    convenience init(configuration: FMConfiguration, callbackQueue: DispatchQueue?, tokenStore: FMTokenStore, logger: FMLogHandler?,
                     now: @escaping @Sendable () -> Date, curlLibraryPath: String) {
        self.init(configuration: configuration, callbackQueue: callbackQueue, tokenStore: tokenStore, logger: logger,
                  clock: SessionClock(wall: now, elapsed: nil), curlLibraryPath: curlLibraryPath)
    }
}
