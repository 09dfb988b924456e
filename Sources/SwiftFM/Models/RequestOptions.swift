import Foundation

/// How FileMaker reads and writes date, time and timestamp values (the `dateformats` parameter, FMS 19.6.1+).
public enum FMDateFormat: Int, Sendable, Hashable, CaseIterable {
    /// US format: `MM/dd/yyyy`, `HH:mm:ss`, `MM/dd/yyyy HH:mm:ss` (FileMaker's default).
    case us = 0
    /// The host file's locale.
    case fileLocale = 1
    /// ISO 8601: `yyyy-MM-dd`.
    case iso8601 = 2
}

/// One sort criterion: a field and an order.
public struct FMSort: Sendable, Hashable {
    /// The sort order of a criterion.
    public enum Order: Sendable, Hashable {
        /// Ascending (FileMaker's default).
        case ascend
        /// Descending.
        case descend
        /// The order of the named value list.
        case valueList(String)

        /// The `sortOrder` value sent on the wire.
        public var wireValue: String {
            switch self {
            case .ascend: return "ascend"
            case .descend: return "descend"
            case .valueList(let name): return name
            }
        }
    }

    /// The field to sort on (`TO::field` for related fields).
    public var field: String
    /// The order.
    public var order: Order

    /// Creates a sort criterion.
    public init(field: String, order: Order = .ascend) {
        self.field = field
        self.order = order
    }

    /// Creates a sort criterion: `FMSort("name")`, `FMSort("name", order: .descend)`.
    public init(_ field: String, order: Order = .ascend) {
        self.init(field: field, order: order)
    }

    /// An ascending criterion.
    public static func ascending(_ field: String) -> FMSort { FMSort(field: field, order: .ascend) }
    /// A descending criterion.
    public static func descending(_ field: String) -> FMSort { FMSort(field: field, order: .descend) }

    var wireObject: [String: Any] { ["fieldName": field, "sortOrder": order.wireValue] }
}

/// Which rows of one portal to return: its name (object name, or table occurrence name) and a window.
public struct FMPortalRange: Sendable, Hashable {
    /// The portal's object name, or its table occurrence name when it has none.
    public var name: String
    /// The first row to return, 1-based (FileMaker's default 1).
    public var offset: Int?
    /// How many rows to return (FileMaker's default 50).
    public var limit: Int?

    /// Creates a portal range.
    public init(_ name: String, offset: Int? = nil, limit: Int? = nil) {
        self.name = name
        self.offset = offset
        self.limit = limit
    }
}

/// A script to run as part of another request, with its optional parameter.
public struct FMScriptCall: Sendable, Hashable, ExpressibleByStringLiteral {
    /// The script's name.
    public var name: String
    /// The script parameter (`Get(ScriptParameter)`).
    public var parameter: String?

    /// Creates a script call.
    public init(_ name: String, parameter: String? = nil) {
        self.name = name
        self.parameter = parameter
    }

    /// Creates a script call without a parameter from a string literal.
    public init(stringLiteral value: String) {
        self.init(value)
    }
}

/// The scripts to run around a record or find request (`script`, `script.prerequest`, `script.presort`).
///
/// FileMaker runs them in this order: pre-request script, the action, pre-sort script, the sort, `script`.
/// Their results come back in ``FMScriptResults``; a script error never fails the request.
public struct FMScriptOptions: Sendable, Hashable {
    /// The script that runs after the action and the sort (`script`, `script.param`).
    public var script: FMScriptCall?
    /// The script that runs before the action (`script.prerequest`, `script.prerequest.param`).
    public var prerequest: FMScriptCall?
    /// The script that runs before the sort (`script.presort`, `script.presort.param`).
    public var presort: FMScriptCall?

    /// Creates script options; no scripts by default.
    public init(script: FMScriptCall? = nil, prerequest: FMScriptCall? = nil, presort: FMScriptCall? = nil) {
        self.script = script
        self.prerequest = prerequest
        self.presort = presort
    }

    /// `true` when no script is requested.
    public var isEmpty: Bool { script == nil && prerequest == nil && presort == nil }

    /// The wire keys and values, in a stable order.
    var entries: [(String, String)] {
        var result: [(String, String)] = []
        for (prefix, call) in [("script", script), ("script.prerequest", prerequest), ("script.presort", presort)] {
            guard let call else { continue }
            result.append((prefix, call.name))
            if let parameter = call.parameter { result.append((prefix + ".param", parameter)) }
        }
        return result
    }

    var validationError: FMError? {
        for call in [script, prerequest, presort] {
            if let call, call.name.isEmpty { return .invalidArgument("A script name is empty") }
        }
        return nil
    }
}

/// Options of the read calls (get one record, get a range).
public struct FMReadOptions: Sendable, Hashable {
    /// The portals to return, each with an optional row window. `nil` returns every portal with
    /// FileMaker's defaults; an empty array returns no portal.
    public var portals: [FMPortalRange]?
    /// Another layout (of the same table) whose fields shape the answer (`layout.response`).
    public var layoutResponse: String?
    /// How dates, times and timestamps are formatted in the answer (`dateformats`).
    public var dateFormat: FMDateFormat?
    /// Scripts to run with the request.
    public var scripts: FMScriptOptions
    /// The time zone FileMaker's dates, times and timestamps are read in when typed records decode them
    /// into `Date` (FileMaker values carry no zone); `nil` reads them as UTC.
    public var timeZone: TimeZone?

    /// Creates read options; everything defaults to FileMaker's behaviour.
    public init(portals: [FMPortalRange]? = nil, layoutResponse: String? = nil,
                dateFormat: FMDateFormat? = nil, scripts: FMScriptOptions = .init(), timeZone: TimeZone? = nil) {
        self.portals = portals
        self.layoutResponse = layoutResponse
        self.dateFormat = dateFormat
        self.scripts = scripts
        self.timeZone = timeZone
    }
}

/// Options of the write calls (create, edit).
public struct FMWriteOptions: Sendable, Hashable {
    /// Who the write acts as for validation and prohibit-modification settings (`options.entrymode`/`prohibitmode`).
    public enum Mode: String, Sendable, Hashable {
        /// As a user (FileMaker's default).
        case user
        /// As a script: bypasses "allow user to override" validation / prohibit-modification settings.
        case script
    }

    /// Scripts to run with the request.
    public var scripts: FMScriptOptions
    /// How date, time and timestamp values in the payload are read (`dateformats`).
    public var dateFormat: FMDateFormat?
    /// `options.entrymode` (FileMaker Server 2024+).
    public var entryMode: Mode?
    /// `options.prohibitmode` (FileMaker Server 2024+).
    public var prohibitMode: Mode?

    /// Creates write options; everything defaults to FileMaker's behaviour.
    public init(scripts: FMScriptOptions = .init(), dateFormat: FMDateFormat? = nil,
                entryMode: Mode? = nil, prohibitMode: Mode? = nil) {
        self.scripts = scripts
        self.dateFormat = dateFormat
        self.entryMode = entryMode
        self.prohibitMode = prohibitMode
    }
}

/// One find request: criteria that are ANDed, and whether the request omits its matches.
public struct FMQuery: Sendable, Hashable {
    /// Field name → criterion in FileMaker find syntax (`"==John"`, `">100"`, `"1...10"`, `"*"`).
    public var fields: [String: String]
    /// `true` for an omit request (removes its matches from the set built by the earlier requests).
    public var omit: Bool

    /// Creates a find request.
    public init(_ fields: [String: String], omit: Bool = false) {
        self.fields = fields
        self.omit = omit
    }

    /// An omit request.
    public static func omit(_ fields: [String: String]) -> FMQuery { FMQuery(fields, omit: true) }

    var wireObject: [String: Any] {
        var object: [String: Any] = fields
        if omit { object["omit"] = "true" }
        return object
    }
}

/// A find (`_find`): requests processed in order (each normal request adds matches, each omit request
/// removes them), then sort, window, portals, response layout, scripts and date format.
public struct FMFindRequest: Sendable, Hashable {
    /// The find requests, in order. At least one is required.
    public var queries: [FMQuery]
    /// The sort of the found set.
    public var sort: [FMSort]
    /// The first record to return, 1-based.
    public var offset: Int?
    /// How many records to return (FileMaker's default 100).
    public var limit: Int?
    /// The portals to return; `nil` returns all of them.
    public var portals: [FMPortalRange]?
    /// Another layout of the same table whose fields shape the answer.
    public var layoutResponse: String?
    /// Scripts to run with the find.
    public var scripts: FMScriptOptions
    /// How dates are written in criteria and formatted in the answer.
    public var dateFormat: FMDateFormat?
    /// The time zone dates, times and timestamps are read in when typed records decode them into `Date`;
    /// `nil` reads them as UTC.
    public var timeZone: TimeZone?

    /// Creates a find request.
    public init(queries: [FMQuery], sort: [FMSort] = [], offset: Int? = nil, limit: Int? = nil,
                portals: [FMPortalRange]? = nil, layoutResponse: String? = nil,
                scripts: FMScriptOptions = .init(), dateFormat: FMDateFormat? = nil, timeZone: TimeZone? = nil) {
        self.timeZone = timeZone
        self.queries = queries
        self.sort = sort
        self.offset = offset
        self.limit = limit
        self.portals = portals
        self.layoutResponse = layoutResponse
        self.scripts = scripts
        self.dateFormat = dateFormat
    }

    /// A find with a single request.
    public init(_ fields: [String: String], sort: [FMSort] = [], offset: Int? = nil, limit: Int? = nil) {
        self.init(queries: [FMQuery(fields)], sort: sort, offset: offset, limit: limit)
    }
}
