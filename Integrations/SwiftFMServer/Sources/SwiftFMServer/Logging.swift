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
    ///
    /// What the logger adds to a line is redacted as the line is (`FMLogEvent.redact(_:)`), keys and values, in every
    /// shape (a `.stringConvertible` as its description, read once and handed on as that text): its own metadata
    /// (`logger[metadataKey:]`), and what its handler's `metadataProvider` returns, which this handler reads as each
    /// line is logged (the handler it hands the line to reads none). SwiftFM's keys are SwiftFM's: a value either has under one of them is dropped. What a
    /// `LogHandler` adds on its own besides (fields of its own, a `MultiplexLogHandler`'s own provider, which it merges
    /// itself) is beyond SwiftFM's reach.
    ///
    /// The logger's `metadataProvider` runs when a line is logged, on SwiftFM's queues, where the caller's task-local
    /// values are not set: set `FMConfiguration.logMetadataProvider` to ``fmLogMetadataProvider`` (as
    /// `DataAPI(configuration:logger:)` does) for a call's lines to carry what it returns in the caller's task.
    public var fmLogHandler: FMLogHandler {
        var quiet = self
        let provider = quiet.handler.metadataProvider
        // Read here, for each line, and redacted: the handler must not add it again unredacted. (Set only when there is
        // one: a handler that supports none warns when it is set.)
        if provider != nil { quiet.handler.metadataProvider = nil }
        let logger = quiet
        let own = logger.handler.metadata
        return { event in
            let level = Logger.Level(event.level)
            guard level >= logger.logLevel else { return }
            var line = logger
            if !own.isEmpty { line.handler.metadata = FMLineMetadata.redacted(own, by: event) }
            var metadata = provider.map { FMLineMetadata.redacted($0.get(), by: event) } ?? Logger.Metadata()
            for (key, value) in event.metadata { metadata[key] = .string(value) }
            line.log(level: level, "\(event.message)", metadata: metadata, source: "SwiftFM")
        }
    }
}

/// What a logger adds to SwiftFM's lines, redacted as the line was.
enum FMLineMetadata {
    /// The keys SwiftFM sets on a call's lines: SwiftFM's alone.
    static let swiftFMKeys: Set<String> = ["fm.request_id", "fm.endpoint", "fm.layout", "fm.table", "fm.code", "http.response.status_code"]

    /// `metadata` without SwiftFM's keys, each key and value redacted by `event`.
    static func redacted(_ metadata: Logger.Metadata, by event: FMLogEvent) -> Logger.Metadata {
        var kept = Logger.Metadata()
        for (key, value) in metadata where !swiftFMKeys.contains(key) {
            let key = event.redact(key)
            if kept[key] == nil { kept[key] = redacted(value, by: event) }
        }
        return kept
    }

    /// `value` in its shape, every text in it (a dictionary's keys too) redacted by `event`; a `.stringConvertible` as the
    /// `.string` of its description, read once and redacted.
    static func redacted(_ value: Logger.MetadataValue, by event: FMLogEvent) -> Logger.MetadataValue {
        switch value {
        case .string(let text):
            return .string(event.redact(text))
        case .stringConvertible(let convertible):
            // The text that was redacted, not the value: its description, read again by the handler, may differ.
            return .string(event.redact(convertible.description))
        case .array(let values):
            return .array(values.map { redacted($0, by: event) })
        case .dictionary(let values):
            var kept = Logger.Metadata()
            for (key, inner) in values {
                let key = event.redact(key)
                if kept[key] == nil { kept[key] = redacted(inner, by: event) }
            }
            return .dictionary(kept)
        }
    }
}

extension Logger {
    /// An `FMLogMetadataProvider` that reads this logger's `metadataProvider` as each SwiftFM call begins, in the
    /// caller's task (or on its thread), so that the call's lines, which SwiftFM logs on its own queues, carry what
    /// the provider returns there: a trace id read from `ServiceContext`, a request id from a task-local. Values are
    /// handed over as text (`Logger.MetadataValue.description`: a nested dictionary or array as its description);
    /// SwiftFM's own keys (`fm.request_id`, …) win. `nil` for a logger without a metadata provider.
    ///
    /// `DataAPI(configuration:logger:)` sets it as the configuration's `logMetadataProvider` when none is set; set it
    /// yourself for a client made with `logger.fmLogHandler` (an `FMOData`, a `DataAPI` over your own transport).
    public var fmLogMetadataProvider: FMLogMetadataProvider? {
        guard let provider = metadataProvider else { return nil }
        return FMLogMetadataProvider { provider.get().mapValues(\.description) }
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
    /// and answer lines under `info`) are not even formatted. When the configuration has no `logMetadataProvider` and
    /// the logger has a `metadataProvider`, it is set to `Logger.fmLogMetadataProvider`: each call's lines carry what
    /// the logger's provider returns in the task (or on the thread) that made the call.
    public convenience init(configuration: FMConfiguration, logger: Logger) {
        var configuration = configuration
        configuration.logLevel = max(configuration.logLevel, FMLogEvent.Level(lowestShownBy: logger.logLevel))
        if configuration.logMetadataProvider == nil { configuration.logMetadataProvider = logger.fmLogMetadataProvider }
        self.init(configuration: configuration, logger: logger.fmLogHandler)
    }
}
