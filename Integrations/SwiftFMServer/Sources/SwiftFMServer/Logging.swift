import Logging
import SwiftFM

extension Logger {
    /// An `FMLogHandler` that writes SwiftFM's lines to this logger.
    ///
    /// Levels map one to one (`debug`, `info`, `warning`, `error`); each line carries its metadata
    /// (`fm.request_id`, `fm.endpoint`, `fm.layout`, `fm.table`, `fm.code`, `http.response.status_code`) as string values,
    /// merged with this logger's own metadata, and the source `SwiftFM`. SwiftFM redacts every line before it
    /// is handed over: no password, Basic value or session token reaches the logger. Request and answer
    /// lines are `debug`, so a logger at the usual `info` shows only what a caller must see.
    public var fmLogHandler: FMLogHandler {
        let logger = self
        return { event in
            let level = Logger.Level(event.level)
            guard level >= logger.logLevel else { return }
            var metadata = Logger.Metadata()
            for (key, value) in event.metadata { metadata[key] = .string(value) }
            logger.log(level: level, "\(event.message)", metadata: metadata, source: "SwiftFM")
        }
    }
}

extension Logger.Level {
    /// The swift-log level of a SwiftFM level.
    public init(_ level: FMLogEvent.Level) {
        switch level {
        case .debug: self = .debug
        case .info: self = .info
        case .warning: self = .warning
        case .error: self = .error
        }
    }
}

extension FMLogEvent.Level {
    /// The lowest SwiftFM level a swift-log logger at `level` shows: `trace` and `debug` show everything,
    /// `notice` and `warning` show warnings and errors, `error` and `critical` errors.
    public init(lowestShownBy level: Logger.Level) {
        switch level {
        case .trace, .debug: self = .debug
        case .info: self = .info
        case .notice, .warning: self = .warning
        case .error, .critical: self = .error
        }
    }
}

extension DataAPI {
    /// Creates a service whose lines go to `logger` (see `Logger.fmLogHandler`).
    ///
    /// - Parameters:
    ///   - configuration: host, database, credentials, limits; set `FMConfiguration.metrics` to an
    ///     ``FMSwiftMetricsObserver`` and `FMConfiguration.instrumentation` to an
    ///     ``FMTracingInstrumentation`` for metrics and traces.
    ///   - logger: receives SwiftFM's redacted lines.
    /// The configuration's `logLevel` is raised to the logger's level, so lines the logger would drop (request
    /// and answer lines under `info`) are not even formatted.
    public convenience init(configuration: FMConfiguration, logger: Logger) {
        var configuration = configuration
        configuration.logLevel = max(configuration.logLevel, FMLogEvent.Level(lowestShownBy: logger.logLevel))
        self.init(configuration: configuration, logger: logger.fmLogHandler)
    }
}
