import Foundation

/// The result type of a FileMaker field, as layout metadata names it (`result`).
public enum FMFieldKind: String, Sendable, Hashable, CaseIterable {
    /// Text (`String`).
    case text
    /// Number.
    case number
    /// A date (`MM/dd/yyyy` in FileMaker's default format).
    case date
    /// A time of day (`HH:mm:ss`).
    case time
    /// A timestamp (`MM/dd/yyyy HH:mm:ss`).
    case timestamp
    /// A container (read as the URL of its data; written only by an upload).
    case container
}

/// One field of a layout as a generated type describes it: the exact FileMaker name, its result type, its
/// repetitions and whether a create or edit may send it.
public struct FMLayoutField: Sendable, Hashable {
    /// The FileMaker name, exactly as the Data API sends it (`TO::field` for related fields).
    public var name: String
    /// The field's result type.
    public var kind: FMFieldKind
    /// The number of repetitions (1 for a field that does not repeat).
    public var repetitions: Int
    /// `false` for calculations, summaries, globals and containers: a create or edit never sends them.
    public var isWritable: Bool

    /// Describes a field.
    public init(_ name: String, _ kind: FMFieldKind, repetitions: Int = 1, isWritable: Bool = true) {
        self.name = name
        self.kind = kind
        self.repetitions = repetitions
        self.isWritable = isWritable
    }
}

/// A type that reads (and writes) the records of one layout, as `fm-codegen` generates them.
///
/// The typed calls that take no layout argument (``DataAPI/getRecords(as:offset:limit:sort:options:completion:)``,
/// ``DataAPI/find(as:request:completion:)``, ``DataAPI/pages(as:find:pageSize:sort:options:)``,
/// ``DataAPI/getRecord(as:recordId:options:completion:)-(_,Int,_,_)``) read ``layout``; each record's `fieldData` is
/// decoded into the type with SwiftFM's FileMaker rules, then ``fillPortals(from:)`` reads its portals.
/// ``DataAPI/createRecord(_:options:completion:)`` and ``DataAPI/editRecord(_:recordId:modId:options:completion:)-(_,Int,_,_,_)``
/// send the fields that are set, leaving out those ``layoutFields`` marks as not writable.
///
/// ```swift
/// struct Artist: FMLayoutRecord, Codable, Sendable, Hashable {
///     static let layout = "Artists"
///     var name: String?
/// }
/// let artists = try await api.getRecords(as: Artist.self)
/// ```
public protocol FMLayoutRecord: Decodable, SendableMetatype {
    /// The layout the records are read from and written to.
    static var layout: String { get }
    /// The layout's fields (exact names, types, repetitions, writability); empty when unknown, and then
    /// every encoded key is sent and a `Date` is sent as a timestamp.
    static var layoutFields: [FMLayoutField] { get }
    /// Reads the record's portals into the value's portal properties; the default reads none.
    /// - Throws: an error when a portal row does not have the shape of its row type.
    mutating func fillPortals(from portals: FMPortals) throws
}

extension FMLayoutRecord {
    /// No table: every encoded key is sent.
    public static var layoutFields: [FMLayoutField] { [] }

    /// No portal properties.
    public mutating func fillPortals(from portals: FMPortals) throws {}
}

/// The portals of one record, as ``FMLayoutRecord/fillPortals(from:)`` reads them.
public struct FMPortals: Sendable {
    /// Portal object name (or table occurrence name) → its rows.
    public var rows: [String: [FMPortalRow]]
    /// The zone dates are read in (UTC when `nil`).
    public var timeZone: TimeZone?

    /// Wraps a record's portals.
    public init(rows: [String: [FMPortalRow]], timeZone: TimeZone? = nil) {
        self.rows = rows
        self.timeZone = timeZone
    }

    /// The rows of `portal` decoded into `Row` with the FileMaker rules of typed records (keys `TO::field`,
    /// plus `recordId` and `modId`); empty when the record has no such portal.
    /// - Throws: ``FMError`` `-1007` naming the row and field when a row does not have the shape of `Row`.
    public func decode<Row: Decodable>(_ portal: String, as type: Row.Type = Row.self) throws -> [Row] {
        guard let rows = rows[portal] else { return [] }
        return try rows.map { try $0.decode(Row.self, timeZone: timeZone) }
    }
}

/// Fills the portal properties of decoded layout records.
enum LayoutPortals {
    /// `true` when `T` has portals to fill (checked once per found set).
    static func fills<T>(_ type: T.Type) -> Bool { T.self is any FMLayoutRecord.Type }

    /// `value` with its portals read from `portals`.
    static func fill<T>(_ value: T, _ portals: [String: [FMPortalRow]], timeZone: TimeZone?) throws -> T {
        guard var record = value as? any FMLayoutRecord else { return value }
        try record.fillPortals(from: FMPortals(rows: portals, timeZone: timeZone))
        return (record as? T) ?? value
    }
}

/// Turns a layout record into the `fieldData` of a create or edit.
enum LayoutWrite {
    private static let marker = "\u{1}FMDate:"

    /// The set fields of `value`: `nil` properties left out, fields that are not writable left out,
    /// repetitions sent as `name`, `name(2)`, …, dates written in `dateFormat` (US unless ISO) in UTC.
    static func fieldData<T: FMLayoutRecord & Encodable>(_ value: T, dateFormat: FMDateFormat?) -> Result<[String: Any], FMError> {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(marker + String(date.timeIntervalSince1970))
        }
        let encoded: Any
        do {
            encoded = try JSONSerialization.jsonObject(with: encoder.encode(value))
        } catch {
            return .failure(FMError(code: FMError.ClientCode.invalidArgument, message: "The fields cannot be encoded as JSON",
                                    underlying: String(describing: error)))
        }
        guard let object = encoded as? [String: Any] else {
            return .failure(.invalidArgument("The fields must encode as a JSON object (a struct)"))
        }
        var table: [String: FMLayoutField] = [:]
        for field in T.layoutFields { table[field.name] = field }
        let iso = dateFormat == .iso8601
        var fieldData: [String: Any] = [:]
        for (name, raw) in object {
            let field = table[name]
            if let field, !field.isWritable { continue }
            let kind = field?.kind ?? .timestamp
            if let values = raw as? [Any] {
                for (index, element) in values.enumerated() where !(element is NSNull) {
                    fieldData[index == 0 ? name : "\(name)(\(index + 1))"] = write(element, kind, iso: iso)
                }
            } else if !(raw is NSNull) {
                fieldData[name] = write(raw, kind, iso: iso)
            }
        }
        return .success(fieldData)
    }

    private static func write(_ value: Any, _ kind: FMFieldKind, iso: Bool) -> Any {
        guard let text = value as? String, text.hasPrefix(marker),
              let seconds = Double(text.dropFirst(marker.count)) else { return value }
        return format(Date(timeIntervalSince1970: seconds), kind, iso: iso)
    }

    /// `date` as FileMaker reads a date, time or timestamp, in UTC.
    static func format(_ date: Date, _ kind: FMFieldKind, iso: Bool) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = FileMakerDecoder.utc
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ n: Int?) -> String { let n = n ?? 0; return n < 10 ? "0\(n)" : "\(n)" }
        func four(_ n: Int?) -> String { let s = String(n ?? 0); return String(repeating: "0", count: max(0, 4 - s.count)) + s }
        let day = iso ? "\(four(c.year))-\(two(c.month))-\(two(c.day))" : "\(two(c.month))/\(two(c.day))/\(four(c.year))"
        let time = "\(two(c.hour)):\(two(c.minute)):\(two(c.second))"
        switch kind {
        case .date: return day
        case .time: return time
        default: return day + " " + time
        }
    }
}
