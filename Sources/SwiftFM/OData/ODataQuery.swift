import Foundation

/// A literal in an ``FMODataFilter``: always written in OData's literal syntax, strings quoted with every
/// `'` doubled, so no value can change the meaning of the filter it is part of.
///
/// FileMaker has no boolean type: `true` and `false` are written `1` and `0`. Dates, times and timestamps
/// are written unquoted in ISO 8601, as FileMaker expects them.
public enum FMODataValue: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    /// Text: `'O''Brien'`.
    case string(String)
    /// An integer: `42`.
    case int(Int)
    /// A decimal number, written in plain notation: `3.25`.
    case decimal(Decimal)
    /// A floating-point number (finite; written in plain notation).
    case double(Double)
    /// A boolean, written `1` or `0` (FileMaker stores booleans as numbers).
    case bool(Bool)
    /// `null` (an empty field).
    case null
    /// A date, `YYYY-MM-DD`.
    case date(year: Int, month: Int, day: Int)
    /// A time of day, `HH:MM:SS`.
    case time(hour: Int, minute: Int, second: Int)
    /// A timestamp, written in UTC: `2024-01-02T13:45:00Z` (rounded to the millisecond, `.250` when it has them).
    case timestamp(Date)

    /// A text literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An integer literal.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A floating-point literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A boolean literal (written `1` or `0`).
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `nil` as `null`.
    public init(nilLiteral: ()) { self = .null }

    /// The calendar date of `date` in `timeZone` (UTC by default).
    public static func date(_ date: Date, in timeZone: TimeZone = TimeZone(secondsFromGMT: 0) ?? .current) -> FMODataValue {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return .date(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0)
    }

    /// The literal as it appears in a filter (or a diagnostic for a value that cannot be written).
    public var description: String {
        switch literal() {
        case .success(let text): return text
        case .failure(let error): return "<invalid: \(error.message)>"
        }
    }

    /// The literal, or `-1002` for a value OData cannot express (a non-finite number, an impossible date).
    func literal() -> Result<String, FMError> {
        switch self {
        case .string(let text):
            return .success("'" + text.replacingOccurrences(of: "'", with: "''") + "'")
        case .int(let value):
            return .success(String(value))
        case .decimal(let value):
            guard !value.isNaN else { return .failure(.invalidArgument("NaN cannot be written in a filter")) }
            return .success(ODataText.plain(value))
        case .double(let value):
            guard value.isFinite else { return .failure(.invalidArgument("\(value) cannot be written in a filter")) }
            if value == value.rounded(), abs(value) < 1e15 { return .success(String(Int64(value))) }
            guard let decimal = Decimal(string: String(value), locale: Locale(identifier: "en_US_POSIX")) else {
                return .failure(.invalidArgument("\(value) cannot be written in a filter"))
            }
            return .success(ODataText.plain(decimal))
        case .bool(let value):
            return .success(value ? "1" : "0")
        case .null:
            return .success("null")
        case .date(let year, let month, let day):
            guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day) else {
                return .failure(.invalidArgument("Not a date: \(year)-\(month)-\(day)"))
            }
            return .success(ODataText.pad(year, 4) + "-" + ODataText.pad(month, 2) + "-" + ODataText.pad(day, 2))
        case .time(let hour, let minute, let second):
            guard (0...23).contains(hour), (0...59).contains(minute), (0...59).contains(second) else {
                return .failure(.invalidArgument("Not a time: \(hour):\(minute):\(second)"))
            }
            return .success(ODataText.pad(hour, 2) + ":" + ODataText.pad(minute, 2) + ":" + ODataText.pad(second, 2))
        case .timestamp(let date):
            // Rounded to the millisecond first, so that the carry reaches the second (and the minute, the day, the year).
            let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
            guard milliseconds.isFinite, abs(milliseconds) < 1e15 else { return .failure(.invalidArgument("Not a timestamp")) }
            let whole = Int64(milliseconds)
            let fraction = Int(((whole % 1000) + 1000) % 1000)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
            let second = Date(timeIntervalSince1970: TimeInterval((whole - Int64(fraction)) / 1000))
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: second)
            guard let year = parts.year, (1...9999).contains(year) else { return .failure(.invalidArgument("The timestamp is out of range")) }
            var text = ODataText.pad(year, 4) + "-" + ODataText.pad(parts.month ?? 1, 2) + "-" + ODataText.pad(parts.day ?? 1, 2)
                + "T" + ODataText.pad(parts.hour ?? 0, 2) + ":" + ODataText.pad(parts.minute ?? 0, 2) + ":" + ODataText.pad(parts.second ?? 0, 2)
            if fraction > 0 { text += "." + ODataText.pad(fraction, 3) }
            return .success(text + "Z")
        }
    }
}

/// An OData `$filter` expression, built so that its literals are always escaped: a value such as
/// `O'Brien` or `x' or 1 eq 1 or 'y` stays one string literal and can never change the filter's meaning.
/// Field names are written as FileMaker wants them: plain names as they are, others (spaces,
/// underscores, non-ASCII letters, a reserved word such as `id`) in double quotes.
///
/// ```swift
/// let filter: FMODataFilter = .eq("last name", "O'Brien") && (.gt("age", 30) || .startsWith("city", "San"))
/// // "last name" eq 'O''Brien' and (age gt 30 or startswith(city,'San'))
/// ```
///
/// A name holding a double quote or a control character cannot be written safely: the call that sends the
/// filter completes with `-1002` instead. ``raw(_:)`` is sent as written, for what the builder lacks.
public struct FMODataFilter: Sendable, Equatable, CustomStringConvertible {
    /// A comparison operator.
    public enum Comparison: String, Sendable, Equatable {
        /// `eq`
        case eq
        /// `ne`
        case ne
        /// `gt`
        case gt
        /// `ge`
        case ge
        /// `lt`
        case lt
        /// `le`
        case le
    }

    indirect enum Node: Sendable, Equatable {
        case compare(String, Comparison, FMODataValue)
        case function(String, String, String)
        case and([Node])
        case or([Node])
        case not(Node)
        case raw(String)
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    /// `field op value`.
    public static func compare(_ field: String, _ comparison: Comparison, _ value: FMODataValue) -> FMODataFilter {
        FMODataFilter(.compare(field, comparison, value))
    }
    /// `field eq value`.
    public static func eq(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .eq, value) }
    /// `field ne value`.
    public static func ne(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .ne, value) }
    /// `field gt value`.
    public static func gt(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .gt, value) }
    /// `field ge value`.
    public static func ge(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .ge, value) }
    /// `field lt value`.
    public static func lt(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .lt, value) }
    /// `field le value`.
    public static func le(_ field: String, _ value: FMODataValue) -> FMODataFilter { compare(field, .le, value) }
    /// `field eq null`: the field is empty.
    public static func isNull(_ field: String) -> FMODataFilter { compare(field, .eq, .null) }
    /// `field ne null`: the field is not empty.
    public static func isNotNull(_ field: String) -> FMODataFilter { compare(field, .ne, .null) }
    /// `contains(field,'text')`.
    public static func contains(_ field: String, _ text: String) -> FMODataFilter { FMODataFilter(.function("contains", field, text)) }
    /// `startswith(field,'text')`.
    public static func startsWith(_ field: String, _ text: String) -> FMODataFilter { FMODataFilter(.function("startswith", field, text)) }
    /// `endswith(field,'text')`.
    public static func endsWith(_ field: String, _ text: String) -> FMODataFilter { FMODataFilter(.function("endswith", field, text)) }
    /// Every filter holds: `(a) and (b) …` (an empty list holds for every record).
    public static func and(_ filters: [FMODataFilter]) -> FMODataFilter {
        // `a && b && c` is one `and` of three (no extra parentheses): nested non-empty `and`s are flattened.
        FMODataFilter(.and(filters.flatMap { filter -> [Node] in
            if case .and(let parts) = filter.node, !parts.isEmpty { return parts }
            return [filter.node]
        }))
    }
    /// At least one filter holds: `(a) or (b) …` (an empty list holds for none).
    public static func or(_ filters: [FMODataFilter]) -> FMODataFilter {
        FMODataFilter(.or(filters.flatMap { filter -> [Node] in
            if case .or(let parts) = filter.node, !parts.isEmpty { return parts }
            return [filter.node]
        }))
    }
    /// The filter does not hold: `not (a)`.
    public static func not(_ filter: FMODataFilter) -> FMODataFilter { FMODataFilter(.not(filter.node)) }
    /// An expression sent exactly as written (parenthesised when combined): for functions and forms the
    /// builder lacks. Nothing in it is escaped: never put untrusted text in it.
    public static func raw(_ expression: String) -> FMODataFilter { FMODataFilter(.raw(expression)) }

    /// `lhs and rhs`.
    public static func && (lhs: FMODataFilter, rhs: FMODataFilter) -> FMODataFilter { and([lhs, rhs]) }
    /// `lhs or rhs`.
    public static func || (lhs: FMODataFilter, rhs: FMODataFilter) -> FMODataFilter { or([lhs, rhs]) }
    /// `not operand`.
    public static prefix func ! (operand: FMODataFilter) -> FMODataFilter { not(operand) }

    /// The expression as sent (before URL encoding), or a diagnostic when a part cannot be written.
    public var description: String {
        switch expression() {
        case .success(let text): return text
        case .failure(let error): return "<invalid: \(error.message)>"
        }
    }

    /// The expression, or `-1002` when a name or a value cannot be written safely.
    func expression() -> Result<String, FMError> {
        do {
            return .success(try Self.render(node, nested: false))
        } catch {
            return .failure(error)
        }
    }

    private static func render(_ node: Node, nested: Bool) throws(FMError) -> String {
        switch node {
        case .compare(let field, let comparison, let value):
            let name = try ODataText.name(field)
            let literal = try value.literal().get()
            return "\(name) \(comparison.rawValue) \(literal)"
        case .function(let function, let field, let text):
            let name = try ODataText.name(field)
            let literal = try FMODataValue.string(text).literal().get()
            return "\(function)(\(name),\(literal))"
        case .and(let parts):
            if parts.isEmpty { return "1 eq 1" }
            if parts.count == 1 { return try render(parts[0], nested: nested) }
            var rendered: [String] = []
            for part in parts { rendered.append(try group(part)) }
            return rendered.joined(separator: " and ")
        case .or(let parts):
            if parts.isEmpty { return "1 eq 0" }
            if parts.count == 1 { return try render(parts[0], nested: nested) }
            var rendered: [String] = []
            for part in parts { rendered.append(try group(part)) }
            return rendered.joined(separator: " or ")
        case .not(let inner):
            return "not " + (try group(inner, always: true))
        case .raw(let text):
            return text
        }
    }

    /// A part of `and`/`or`/`not`: parenthesised unless it is a comparison, a function call or a `not` (which
    /// binds tighter than `and` and `or`); the operand of `not` always.
    private static func group(_ node: Node, always: Bool = false) throws(FMError) -> String {
        let text = try render(node, nested: true)
        switch node {
        case .compare, .function, .not: return always ? "(" + text + ")" : text
        case .and(let parts) where parts.count == 1, .or(let parts) where parts.count == 1: return try group(parts[0], always: always)
        default: return "(" + text + ")"
        }
    }
}

/// The sort direction of one ``FMODataQuery/orderBy`` entry.
public struct FMODataOrder: Sendable, Equatable {
    /// The field name (written in double quotes when FileMaker needs them).
    public var field: String
    /// `true` for `desc`.
    public var descending: Bool

    /// Sorts by `field`, ascending unless `descending`.
    public init(_ field: String, descending: Bool = false) {
        self.field = field
        self.descending = descending
    }

    /// Ascending by `field`.
    public static func ascending(_ field: String) -> FMODataOrder { FMODataOrder(field) }
    /// Descending by `field`.
    public static func descending(_ field: String) -> FMODataOrder { FMODataOrder(field, descending: true) }
}

/// One ``FMODataQuery/expand`` entry: a navigation property (a related table occurrence) with its own
/// options (`Orders($select=id,total;$top=3)`).
public struct FMODataExpand: Sendable, Equatable {
    /// The navigation property's name.
    public var navigation: String
    /// The options of the expanded rows (`count` is not sent for an expansion).
    public var query: FMODataQuery

    /// Expands `navigation` with `query`'s options.
    public init(_ navigation: String, query: FMODataQuery = FMODataQuery()) {
        self.navigation = navigation
        self.query = query
    }
}

/// One aggregation of an ``FMODataApply``: `field with method as alias`.
public struct FMODataAggregate: Sendable, Equatable {
    /// The aggregation methods FileMaker's `$apply` documents (FileMaker Server 22.0.1 and later).
    public enum Method: String, Sendable, Equatable, CaseIterable {
        /// The sum of the non-empty values (a number field).
        case sum
        /// The smallest non-empty value.
        case min
        /// The largest non-empty value.
        case max
        /// The mean of the non-empty values (a number field).
        case average
        /// How many distinct non-empty values there are.
        case countdistinct
    }

    /// The field aggregated.
    public var field: String
    /// How.
    public var method: Method
    /// The name of the result's column.
    public var alias: String

    /// `field with method as alias`.
    public init(_ field: String, _ method: Method, as alias: String) {
        self.field = field
        self.method = method
        self.alias = alias
    }

    /// `field with sum as alias`.
    public static func sum(_ field: String, as alias: String) -> FMODataAggregate { FMODataAggregate(field, .sum, as: alias) }
    /// `field with min as alias`.
    public static func min(_ field: String, as alias: String) -> FMODataAggregate { FMODataAggregate(field, .min, as: alias) }
    /// `field with max as alias`.
    public static func max(_ field: String, as alias: String) -> FMODataAggregate { FMODataAggregate(field, .max, as: alias) }
    /// `field with average as alias`.
    public static func average(_ field: String, as alias: String) -> FMODataAggregate { FMODataAggregate(field, .average, as: alias) }
    /// `field with countdistinct as alias`.
    public static func countDistinct(_ field: String, as alias: String) -> FMODataAggregate {
        FMODataAggregate(field, .countdistinct, as: alias)
    }

    func expression() throws(FMError) -> String {
        try ODataText.name(field) + " with " + method.rawValue + " as " + ODataText.name(alias)
    }
}

/// An OData `$apply` (FileMaker Server 22.0.1 and later): transformations applied in order, separated by
/// `/` — `filter(…)`, `aggregate(…)`, `groupby((…),aggregate(…))`. Names are written as in filters (in
/// double quotes when FileMaker needs them) and filter literals are escaped, so no value can change the
/// transformation's meaning.
///
/// ```swift
/// let apply: FMODataApply = .filter(.gt("year", 1990))
///     .then(.groupBy(["artist_id"], [.sum("sales", as: "total"), .countDistinct("title", as: "albums")]))
/// // filter(year gt 1990)/groupby((artist_id),aggregate(sales with sum as total,title with countdistinct as albums))
/// ```
///
/// The rows of an aggregating `$apply` hold the grouping fields and the aliases: read them with
/// ``FMOData/records(from:query:completion:)`` (or a `Decodable` of those names).
public struct FMODataApply: Sendable, Equatable, CustomStringConvertible {
    enum Step: Sendable, Equatable {
        case filter(FMODataFilter)
        case aggregate([FMODataAggregate])
        case groupBy([String], [FMODataAggregate])
        case raw(String)
    }

    let steps: [Step]

    init(_ steps: [Step]) { self.steps = steps }

    /// `filter(expression)`: keeps the records (or rows) the filter holds for.
    public static func filter(_ filter: FMODataFilter) -> FMODataApply { FMODataApply([.filter(filter)]) }
    /// `aggregate(a, …)`: one row of aggregates over every record.
    public static func aggregate(_ aggregates: [FMODataAggregate]) -> FMODataApply { FMODataApply([.aggregate(aggregates)]) }
    /// `aggregate(a, …)`.
    public static func aggregate(_ aggregates: FMODataAggregate...) -> FMODataApply { aggregate(aggregates) }
    /// `groupby((f, …))` or `groupby((f, …),aggregate(a, …))`: one row per distinct combination of `fields`.
    public static func groupBy(_ fields: [String], _ aggregates: [FMODataAggregate] = []) -> FMODataApply {
        FMODataApply([.groupBy(fields, aggregates)])
    }
    /// A transformation sent exactly as written, for what the builder lacks. Nothing in it is escaped:
    /// never put untrusted text in it.
    public static func raw(_ transformation: String) -> FMODataApply { FMODataApply([.raw(transformation)]) }
    /// This transformation, then `next` (`a/b`).
    public func then(_ next: FMODataApply) -> FMODataApply { FMODataApply(steps + next.steps) }

    /// The `$apply` text as sent (before URL encoding), or a diagnostic when a part cannot be written.
    public var description: String {
        switch expression() {
        case .success(let text): return text
        case .failure(let error): return "<invalid: \(error.message)>"
        }
    }

    /// The text, or `-1002` for an empty transformation, an empty list, or a name that cannot be written.
    func expression() -> Result<String, FMError> {
        do throws(FMError) {
            guard !steps.isEmpty else { throw .invalidArgument("An empty $apply") }
            var parts: [String] = []
            for step in steps {
                switch step {
                case .filter(let filter):
                    parts.append("filter(" + (try filter.expression().get()) + ")")
                case .aggregate(let aggregates):
                    parts.append(try Self.aggregates(aggregates))
                case .groupBy(let fields, let aggregates):
                    guard !fields.isEmpty else { throw .invalidArgument("groupby needs at least one field") }
                    var names: [String] = []
                    for field in fields { names.append(try ODataText.name(field)) }
                    parts.append("groupby((" + names.joined(separator: ",") + ")"
                                 + (aggregates.isEmpty ? "" : "," + (try Self.aggregates(aggregates))) + ")")
                case .raw(let text):
                    guard !text.isEmpty else { throw .invalidArgument("An empty $apply transformation") }
                    parts.append(text)
                }
            }
            return .success(parts.joined(separator: "/"))
        } catch {
            return .failure(error)
        }
    }

    private static func aggregates(_ aggregates: [FMODataAggregate]) throws(FMError) -> String {
        guard !aggregates.isEmpty else { throw .invalidArgument("aggregate needs at least one aggregation") }
        var items: [String] = []
        for aggregate in aggregates { items.append(try aggregate.expression()) }
        return "aggregate(" + items.joined(separator: ",") + ")"
    }
}

/// The system query options of an OData read: `$apply`, `$filter`, `$select`, `$orderby`, `$top`, `$skip`,
/// `$count` and `$expand`, encoded as FileMaker needs them (spaces as `%20`, and `,` `$` `(` `)` `=` `;`
/// left unencoded).
public struct FMODataQuery: Sendable, Equatable {
    /// Which records (`$filter`); `nil` for all.
    public var filter: FMODataFilter?
    /// Which fields (`$select`); empty for FileMaker's default (every field except containers and summaries).
    public var select: [String]
    /// The sort (`$orderby`).
    public var orderBy: [FMODataOrder]
    /// At most this many records (`$top`).
    public var top: Int?
    /// Skips this many records first (`$skip`).
    public var skip: Int?
    /// Asks for the number of matching records, whatever `top` and `skip` (`$count=true`).
    public var count: Bool
    /// Related rows to include (`$expand`).
    public var expand: [FMODataExpand]
    /// Transformations applied before the other options (`$apply`: filter, aggregate, group; FileMaker
    /// Server 22.0.1 and later). Not sent inside an ``FMODataExpand``.
    public var apply: FMODataApply?

    /// Creates a query; every option is optional.
    public init(filter: FMODataFilter? = nil, select: [String] = [], orderBy: [FMODataOrder] = [], top: Int? = nil,
                skip: Int? = nil, count: Bool = false, expand: [FMODataExpand] = []) {
        self.filter = filter
        self.select = select
        self.orderBy = orderBy
        self.top = top
        self.skip = skip
        self.count = count
        self.expand = expand
        self.apply = nil
    }

    /// Creates a query with an `$apply`; every other option is optional.
    public init(apply: FMODataApply?, filter: FMODataFilter? = nil, select: [String] = [], orderBy: [FMODataOrder] = [],
                top: Int? = nil, skip: Int? = nil, count: Bool = false, expand: [FMODataExpand] = []) {
        self.init(filter: filter, select: select, orderBy: orderBy, top: top, skip: skip, count: count, expand: expand)
        self.apply = apply
    }

    /// The options as `(name, value)` pairs, not yet URL-encoded, in the order FileMaker's clients send them.
    func options(nested: Bool = false) -> Result<[(String, String)], FMError> {
        do {
            var options: [(String, String)] = []
            if let apply, !nested { options.append(("$apply", try apply.expression().get())) }
            if !select.isEmpty {
                var names: [String] = []
                for field in select { names.append(try ODataText.name(field)) }
                options.append(("$select", names.joined(separator: ",")))
            }
            if let filter { options.append(("$filter", try filter.expression().get())) }
            if !expand.isEmpty {
                var items: [String] = []
                for item in expand {
                    let name = try ODataText.name(item.navigation)
                    let inner = try item.query.options(nested: true).get()
                    items.append(inner.isEmpty ? name : name + "(" + inner.map { "\($0.0)=\($0.1)" }.joined(separator: ";") + ")")
                }
                options.append(("$expand", items.joined(separator: ",")))
            }
            if !orderBy.isEmpty {
                var items: [String] = []
                for order in orderBy { items.append(try ODataText.name(order.field) + (order.descending ? " desc" : "")) }
                options.append(("$orderby", items.joined(separator: ",")))
            }
            if let top {
                guard top >= 0 else { throw FMError.invalidArgument("$top must not be negative") }
                options.append(("$top", String(top)))
            }
            if let skip {
                guard skip >= 0 else { throw FMError.invalidArgument("$skip must not be negative") }
                options.append(("$skip", String(skip)))
            }
            if count, !nested { options.append(("$count", "true")) }
            return .success(options)
        } catch let error as FMError {
            return .failure(error)
        } catch {
            return .failure(.invalidArgument(String(describing: error)))
        }
    }

    /// The encoded query string (no leading `?`), empty when no option is set.
    func queryString() -> Result<String, FMError> {
        options().map { pairs in pairs.map { $0.0 + "=" + ODataText.encodeQuery($0.1) }.joined(separator: "&") }
    }
}

/// The key of one record in an OData URL: `Contacts(42)`, `Contacts('O''Brien')`, `Contacts(ROWID=7)`, or a
/// composite key `contact(3276,'211E…')`.
///
/// Use the primary key field's value (`string(_:)` for text, `number(_:)` for numbers), or the record's
/// `ROWID` when the table has no primary key. Integer and string literals make keys directly.
public struct FMODataKey: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    let parts: [Part]

    enum Part: Sendable, Equatable {
        case string(String)
        case number(String)
        case rowID(Int)
    }

    /// A text key, quoted with every `'` doubled: `('O''Brien')`.
    public static func string(_ value: String) -> FMODataKey { FMODataKey(parts: [.string(value)]) }
    /// A numeric key, unquoted: `(42)`.
    public static func number(_ value: Int) -> FMODataKey { FMODataKey(parts: [.number(String(value))]) }
    /// A decimal key, unquoted in plain notation.
    public static func number(_ value: Decimal) -> FMODataKey { FMODataKey(parts: [.number(ODataText.plain(value))]) }
    /// A record id addressed by FileMaker's `ROWID` system field: `(ROWID=7)`. A table without a primary
    /// key also takes its `ROWID` as a plain `number`.
    public static func rowID(_ value: Int) -> FMODataKey { FMODataKey(parts: [.rowID(value)]) }
    /// A composite key, its parts in the order of the entity type's `Key`: `(3276,'211E…')`.
    public static func composite(_ keys: [FMODataKey]) -> FMODataKey { FMODataKey(parts: keys.flatMap(\.parts)) }

    /// A text key.
    public init(stringLiteral value: String) { self.parts = [.string(value)] }
    /// A numeric key.
    public init(integerLiteral value: Int) { self.parts = [.number(String(value))] }
    init(parts: [Part]) { self.parts = parts }

    /// The key as it appears in the URL before encoding, parentheses included: `('O''Brien')`.
    public var description: String {
        "(" + parts.map { part -> String in
            switch part {
            case .string(let text): return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
            case .number(let text): return text
            case .rowID(let id): return "ROWID=" + String(id)
            }
        }.joined(separator: ",") + ")"
    }

    /// The encoded key segment, or `-1002` for an empty composite key.
    func encoded() -> Result<String, FMError> {
        guard !parts.isEmpty else { return .failure(.invalidArgument("An empty key")) }
        return .success(ODataText.encodePath(description))
    }
}

/// Writing names, numbers and URLs the way FileMaker's OData service reads them.
enum ODataText {

    /// Words a bare name would be read as: written in double quotes instead.
    private static let reserved: Set<String> = [
        "and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "has", "in", "add", "sub", "mul", "div", "divby", "mod",
        "null", "true", "false", "id", "asc", "desc", "inf", "nan", "rowid", "rowmodid",
    ]

    /// A field, table or navigation name for `$filter`, `$select`, `$orderby`, `$expand`: as it is when it is a
    /// plain ASCII name (a letter, then letters or digits) or an FMFID/FMTID, `ROWID` and `ROWMODID` as they
    /// are, anything else in double quotes; `-1002` when it is empty or holds `"` or a control character.
    static func name(_ name: String) throws(FMError) -> String {
        guard !name.isEmpty else { throw .invalidArgument("An empty field name") }
        guard !name.contains("\""), name.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
            throw .invalidArgument("The name \(name.debugDescription) cannot be written in an OData query")
        }
        if name == "ROWID" || name == "ROWMODID" { return name }
        if isEntityID(name) { return name }
        let bytes = Array(name.utf8)
        let plain = bytes.first.map(isLetter) == true && bytes.allSatisfy { isLetter($0) || isDigit($0) }
        if plain, !reserved.contains(name.lowercased()) { return name }
        return "\"" + name + "\""
    }

    /// `FMFID:123` or `FMTID:123`.
    static func isEntityID(_ name: String) -> Bool {
        guard name.hasPrefix("FMFID:") || name.hasPrefix("FMTID:") else { return false }
        let digits = name.utf8.dropFirst(6)
        return !digits.isEmpty && digits.allSatisfy(isDigit)
    }

    @inline(__always) private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    @inline(__always) private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// `value` zero-padded to `width` digits.
    static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    /// A decimal in plain notation (no exponent, `.` as the separator).
    static func plain(_ value: Decimal) -> String {
        var copy = value
        return NSDecimalString(&copy, Locale(identifier: "en_US_POSIX"))
    }

    /// Bytes left as they are in a query option's value: RFC 3986 unreserved characters and
    /// `! $ ' ( ) * , ; = : @ /`, which FileMaker refuses percent-encoded inside system query options.
    /// Everything else is percent-encoded from UTF-8: a space is `%20` (never `+`), and `&` `+` `#` `%` `"`
    /// `?` can neither end the option nor change a literal.
    static func encodeQuery(_ text: String) -> String { encode(text, keeping: "!$'()*,;=:@/") }

    /// Bytes left as they are in a path segment: unreserved characters and `! $ ' ( ) * , ; = : @`;
    /// `/`, `?`, `#`, `%`, `&`, `+`, space and non-ASCII are percent-encoded.
    static func encodePath(_ text: String) -> String {
        if !text.isEmpty, text.allSatisfy({ $0 == "." }) { return String(repeating: "%2E", count: text.count) }
        return encode(text, keeping: "!$'()*,;=:@")
    }

    private static func encode(_ text: String, keeping extra: StaticString) -> String {
        RequestBuilder.encode(text, keeping: extra.withUTF8Buffer { Set($0) })
    }
}
