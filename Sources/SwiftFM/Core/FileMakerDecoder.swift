import Foundation

/// Decodes the caller's `Decodable` types from a parsed Data API answer (a `JSONSerialization`-shaped tree:
/// `String`, `NSNumber`, `NSNull`, `[Any]`, `[String: Any]`) with the rules real FileMaker data needs.
///
/// * An empty field is `""` for every field type: an optional property that cannot hold `""` (a number,
///   a date, an enum without an empty case) reads it as `nil`. A non-optional one fails.
/// * Numbers sent as text (`"42"`, `" 3.5 "`) decode into numeric properties (a number into a `String`
///   property is still a mismatch); `Bool` takes `true`/`false`, `1`/`0` and their text forms.
/// * Dates, times and timestamps decode into `Date` from every `dateformats` FileMaker writes: US
///   `MM/dd/yyyy` (formats 0 and 1, and the server default), ISO `yyyy-MM-dd` (format 2), with an optional
///   time `HH:mm:ss[.fff]` (24-hour, or 12-hour with `AM`/`PM`) after a space or `T`. A time alone is that
///   time on 1970-01-01. FileMaker values carry no time zone: they are read in ``timeZone`` (UTC unless the
///   call says otherwise). A JSON number decodes as `JSONDecoder`'s default (seconds since 2001-01-01).
/// * Repetitions: a property whose type is an array reads a repeating field's `name`, `name(2)`,
///   `name(3)`, … in order (trailing empty repetitions left out); a key `name(1)` also finds `name`, and
///   `name` finds `name(1)` (portal rows send `TO::field(1)`). A key `name(2)` reads that repetition.
struct FileMakerDecoder {
    /// The zone FileMaker dates, times and timestamps are read in.
    var timeZone: TimeZone

    init(timeZone: TimeZone? = nil) {
        self.timeZone = timeZone ?? FileMakerDecoder.utc
    }

    static let utc = TimeZone(secondsFromGMT: 0) ?? TimeZone.current

    /// Decodes `T` from a parsed JSON value.
    func decode<T: Decodable>(_ type: T.Type, from value: Any, codingPath: [any CodingKey] = []) throws -> T {
        try FMValueDecoder(value: value, codingPath: codingPath, options: self).unbox(T.self)
    }

    /// Parses a found-set answer once and decodes it into typed records.
    func foundSet<T: Decodable>(_ type: T.Type, body: Data, status: Int) throws(FMError) -> FMTypedFoundSet<T> {
        try foundSet(T.self, response: JSONPayload.responseObject(body, status: status), status: status)
    }

    /// Decodes a found-set `response` object (`data`, `dataInfo`, script keys) into typed records. A record
    /// that does not decode gives `-1007` naming the record id and the field.
    func foundSet<T: Decodable>(_ type: T.Type, response: [String: Any], status: Int) throws(FMError) -> FMTypedFoundSet<T> {
        guard let data = response["data"] as? [Any] else {
            throw FMError.malformed("no \"data\" array in the found set", status: status)
        }
        let dataInfo = (response["dataInfo"] as? [String: Any]).map(FMDataInfo.init(raw:))
        return FMTypedFoundSet(records: try records(T.self, data, status: status), dataInfo: dataInfo, scripts: FMScriptResults(raw: response))
    }

    /// The records of `data`, each decoded with ``record(_:raw:index:status:)``.
    func records<T: Decodable>(_ type: T.Type, _ data: [Any], status: Int) throws(FMError) -> [FMRecord<T>] {
        var records: [FMRecord<T>] = []
        records.reserveCapacity(data.count)
        for (index, element) in data.enumerated() {
            guard let raw = element as? [String: Any] else {
                throw FMError.malformed("record \(index + 1) of \"data\" is not an object", status: status)
            }
            records.append(try record(T.self, raw: raw, index: index, status: status))
        }
        return records
    }

    /// One record of `data`.
    func record<T: Decodable>(_ type: T.Type, raw: [String: Any], index: Int, status: Int) throws(FMError) -> FMRecord<T> {
        let recordId = RawJSON.string(raw["recordId"])
        let name = recordId.map { "record \($0)" } ?? "record \(index + 1) of the found set"
        guard let recordId else {
            throw FMError.malformed("\(name) has no recordId", status: status)
        }
        guard let fields = raw["fieldData"] as? [String: Any] else {
            throw FMError.malformed("\(name) has no fieldData object", status: status)
        }
        let fieldData: T
        do {
            fieldData = try decode(T.self, from: fields)
        } catch {
            throw FMError(code: FMError.ClientCode.malformedResponse,
                          message: "Unexpected response: \(name) cannot be read as \(T.self): \(Self.describe(error))",
                          httpStatus: status, underlying: String(describing: error))
        }
        var portals: [String: [FMPortalRow]] = [:]
        if let portalData = raw["portalData"] as? [String: Any] {
            for (portal, rows) in portalData {
                guard let rows = rows as? [Any] else {
                    throw FMError.malformed("\(name): portal \(portal) is not an array", status: status)
                }
                var parsed: [FMPortalRow] = []
                parsed.reserveCapacity(rows.count)
                for row in rows {
                    guard let row = row as? [String: Any], let rowId = RawJSON.string(row["recordId"]) else {
                        throw FMError.malformed("\(name): a row of portal \(portal) has no recordId", status: status)
                    }
                    var values: [String: FMFieldValue] = [:]
                    for (key, value) in row where key != "recordId" && key != "modId" {
                        values[key] = FMFieldValue(any: value)
                    }
                    parsed.append(FMPortalRow(recordId: rowId, modId: RawJSON.string(row["modId"]), fields: values))
                }
                portals[portal] = parsed
            }
        }
        let portalInfo = (raw["portalDataInfo"] as? [Any])?.compactMap { ($0 as? [String: Any]).map(FMPortalDataInfo.init(raw:)) }
        return FMRecord(recordId: recordId, modId: RawJSON.string(raw["modId"]) ?? "", fieldData: fieldData,
                        portalData: portals, portalDataInfo: portalInfo)
    }

    /// "field `price`: expected Double, found text" — the path and the problem, never the value.
    static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return String(describing: error) }
        func field(_ path: [any CodingKey]) -> String {
            guard !path.isEmpty else { return "the record" }
            return "field " + path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch decoding {
        case .keyNotFound(let key, let context):
            return "\(field(context.codingPath + [key])) is missing"
        case .typeMismatch(let type, let context):
            return "\(field(context.codingPath)): expected \(type); \(context.debugDescription)"
        case .valueNotFound(let type, let context):
            return "\(field(context.codingPath)) is empty (expected \(type); make the property optional)"
        case .dataCorrupted(let context):
            return "\(field(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "decoding failed"
        }
    }
}

// MARK: - The decoder

/// A `Decoder` over one parsed value.
private final class FMValueDecoder: Decoder {
    let value: Any
    let codingPath: [any CodingKey]
    let options: FileMakerDecoder
    /// The object and key this value came from, for reading a repeating field as an array.
    let origin: (object: [String: Any], key: String)?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: Any, codingPath: [any CodingKey], options: FileMakerDecoder, origin: (object: [String: Any], key: String)? = nil) {
        self.value = value
        self.codingPath = codingPath
        self.options = options
        self.origin = origin
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let object = value as? [String: Any] else {
            throw FMValueDecoder.mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(FMKeyedContainer<Key>(object: object, codingPath: codingPath, options: options))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if let array = value as? [Any] {
            return FMUnkeyedContainer(elements: array, codingPath: codingPath, options: options)
        }
        if let origin {
            return FMUnkeyedContainer(elements: FMValueDecoder.repetitions(of: origin.key, in: origin.object),
                                      codingPath: codingPath, options: options)
        }
        throw FMValueDecoder.mismatch([Any].self, value, codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        FMSingleValueContainer(decoder: self)
    }

    /// Decodes `T` from ``value``, with the types that need FileMaker rules handled here.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == Date.self, let date = try FMValueDecoder.date(value, options, codingPath) as? T { return date }
        if T.self == Decimal.self, let decimal = try FMValueDecoder.decimal(value, codingPath) as? T { return decimal }
        if T.self == FMFieldValue.self, let field = FMFieldValue(any: value) as? T { return field }
        return try T(from: self)
    }

    // MARK: Values

    static func mismatch(_ type: Any.Type, _ value: Any, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path(), debugDescription: "found \(kind(of: value))"))
    }

    static func kind(of value: Any) -> String {
        switch value {
        case let text as String: return text.isEmpty ? "an empty value" : "text"
        case is NSNull: return "null"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        default: return "a number"
        }
    }

    static func isNull(_ value: Any) -> Bool { value is NSNull }

    /// The number held by `value`: a JSON number, or text that reads as one (`"42"`, `" -3.5 "`).
    static func number(_ value: Any) -> NSNumber? {
        switch value {
        case let text as String:
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if let integer = Int(trimmed) { return NSNumber(value: integer) }
            if let double = Double(trimmed), double.isFinite, trimmed.first.map({ $0.isNumber || $0 == "-" || $0 == "+" || $0 == "." }) == true {
                return NSNumber(value: double)
            }
            return nil
        case let number as NSNumber:
            return number
        case let double as Double:
            return NSNumber(value: double)
        case let integer as Int:
            return NSNumber(value: integer)
        default:
            return nil
        }
    }

    @inline(__always) static func isBoolean(_ number: NSNumber) -> Bool {
        if number === JSONReader.trueValue || number === JSONReader.falseValue { return true }
        // Plain NSNumbers are never booleans; only the (rare) subclasses need the type code.
        return type(of: number) != NSNumber.self && !(number is NSDecimalNumber) && String(cString: number.objCType) == "c"
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: Any, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        if let number = value as? NSNumber, !isBoolean(number) {
            let double = number.doubleValue
            if abs(double) < 9_007_199_254_740_992, let exact = I(exactly: double) { return exact }
        } else if let text = value as? String, let exact = I(text.trimmingCharacters(in: .whitespaces)) {
            return exact
        }
        guard let number = number(value), !isBoolean(number) else { throw mismatch(I.self, value, path()) }
        let double = number.doubleValue
        if abs(double) < 9_007_199_254_740_992, let exact = I(exactly: double) { return exact }
        if let exact = RawJSON.exactInt(number).flatMap({ I(exactly: $0) }) { return exact }
        if let exact = I(number.stringValue) { return exact }
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "the number does not fit in \(I.self)"))
    }

    static func double(_ value: Any, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        if let number = value as? NSNumber, !isBoolean(number) { return number.doubleValue }
        guard let number = number(value), !isBoolean(number) else { throw mismatch(Double.self, value, path()) }
        return number.doubleValue
    }

    static func string(_ value: Any, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        // A number does not read as text: a number where text is expected is a layout the type does not match.
        guard let text = value as? String else { throw mismatch(String.self, value, path()) }
        return text
    }

    static func bool(_ value: Any, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch value {
        case let flag as Bool: return flag
        case let text as String:
            switch text.trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: throw mismatch(Bool.self, value, path())
            }
        case let number as NSNumber:
            if isBoolean(number) { return number.boolValue }
            switch number.doubleValue {
            case 1: return true
            case 0: return false
            default: throw mismatch(Bool.self, value, path())
            }
        default: throw mismatch(Bool.self, value, path())
        }
    }

    static func decimal(_ value: Any, _ path: [any CodingKey]) throws -> Decimal {
        switch value {
        case let text as String:
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if number(trimmed) != nil, let decimal = Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")) { return decimal }
        case let number as NSNumber where !isBoolean(number):
            if let decimal = Decimal(string: number.stringValue, locale: Locale(identifier: "en_US_POSIX")) { return decimal }
        default:
            break
        }
        throw mismatch(Decimal.self, value, path)
    }

    static func date(_ value: Any, _ options: FileMakerDecoder, _ path: [any CodingKey]) throws -> Date {
        if let text = value as? String {
            if let date = FileMakerDate.parse(text, timeZone: options.timeZone) { return date }
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription:
                text.isEmpty ? "an empty value is not a date" : "not a FileMaker date, time or timestamp"))
        }
        if let number = value as? NSNumber, !isBoolean(number) {
            return Date(timeIntervalSinceReferenceDate: number.doubleValue)
        }
        throw mismatch(Date.self, value, path)
    }

    /// A repeating field's values in order: `key` (or `key(1)`), `key(2)`, … up to the first missing one,
    /// without trailing empty repetitions.
    static func repetitions(of key: String, in object: [String: Any]) -> [Any] {
        var values: [Any] = []
        if let first = object[key] ?? object[key + "(1)"] { values.append(first) }
        var index = 2
        while let next = object["\(key)(\(index))"] {
            values.append(next)
            index += 1
        }
        while let last = values.last, (last as? String)?.isEmpty == true { values.removeLast() }
        return values
    }
}

/// `Key` → value lookup with the repetition aliases (`name(1)` ⇄ `name`).
private func lookup(_ key: String, in object: [String: Any]) -> Any? {
    if let value = object[key] { return value }
    if key.hasSuffix("(1)") { return object[String(key.dropLast(3))] }
    if key.last != ")" { return object[key + "(1)"] }
    return nil
}

private struct FMKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: Any]
    let codingPath: [any CodingKey]
    let options: FileMakerDecoder

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { lookup(key.stringValue, in: object) != nil }

    private func value(_ key: Key) throws -> Any {
        guard let value = lookup(key.stringValue, in: object) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "the layout sent no field \(key.stringValue)"))
        }
        if FMValueDecoder.isNull(value) {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath + [key], debugDescription: "null"))
        }
        return value
    }

    /// `nil` for a missing key or `null`; for `""`, the decoded value when the type can hold it, else `nil`.
    private func ifPresent<T>(_ key: Key, _ read: (Any) throws -> T) throws -> T? {
        guard let value = lookup(key.stringValue, in: object), !FMValueDecoder.isNull(value) else { return nil }
        if let text = value as? String, text.isEmpty {
            return try? read(value)
        }
        return try read(value)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = lookup(key.stringValue, in: object) else { return true }
        return FMValueDecoder.isNull(value)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try FMValueDecoder.bool(value(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try FMValueDecoder.string(value(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try FMValueDecoder.double(value(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try FMValueDecoder.double(value(key), codingPath + [key])) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try FMValueDecoder.integer(Int.self, value(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try FMValueDecoder.integer(Int8.self, value(key), codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try FMValueDecoder.integer(Int16.self, value(key), codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try FMValueDecoder.integer(Int32.self, value(key), codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try FMValueDecoder.integer(Int64.self, value(key), codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try FMValueDecoder.integer(UInt.self, value(key), codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try FMValueDecoder.integer(UInt8.self, value(key), codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try FMValueDecoder.integer(UInt16.self, value(key), codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try FMValueDecoder.integer(UInt32.self, value(key), codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try FMValueDecoder.integer(UInt64.self, value(key), codingPath + [key]) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try child(value(key), key).unbox(T.self)
    }

    private func child(_ value: Any, _ key: Key) -> FMValueDecoder {
        FMValueDecoder(value: value, codingPath: codingPath + [key], options: options, origin: (object, key.stringValue))
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try ifPresent(key) { try FMValueDecoder.bool($0, codingPath + [key]) } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try ifPresent(key) { try FMValueDecoder.string($0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try ifPresent(key) { try FMValueDecoder.double($0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try ifPresent(key) { Float(try FMValueDecoder.double($0, codingPath + [key])) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try ifPresent(key) { try FMValueDecoder.integer(Int.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try ifPresent(key) { try FMValueDecoder.integer(Int8.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try ifPresent(key) { try FMValueDecoder.integer(Int16.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try ifPresent(key) { try FMValueDecoder.integer(Int32.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try ifPresent(key) { try FMValueDecoder.integer(Int64.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try ifPresent(key) { try FMValueDecoder.integer(UInt.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try ifPresent(key) { try FMValueDecoder.integer(UInt8.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try ifPresent(key) { try FMValueDecoder.integer(UInt16.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try ifPresent(key) { try FMValueDecoder.integer(UInt32.self, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try ifPresent(key) { try FMValueDecoder.integer(UInt64.self, $0, codingPath + [key]) } }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try ifPresent(key) { try child($0, key).unbox(T.self) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(value(key), key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try child(lookup(key.stringValue, in: object) ?? "", key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        FMValueDecoder(value: object, codingPath: codingPath, options: options)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        child(lookup(key.stringValue, in: object) ?? NSNull(), key)
    }
}

private struct FMUnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [Any]
    let codingPath: [any CodingKey]
    let options: FileMakerDecoder
    var currentIndex = 0

    init(elements: [Any], codingPath: [any CodingKey], options: FileMakerDecoder) {
        self.elements = elements
        self.codingPath = codingPath
        self.options = options
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { intValue.map(String.init) ?? "" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { return nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    private var path: [any CodingKey] { codingPath + [Index(currentIndex)] }

    private mutating func next() throws -> Any {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: path, debugDescription: "no more elements"))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if FMValueDecoder.isNull(elements[currentIndex]) {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let p = path; return try FMValueDecoder.bool(next(), p) }
    mutating func decode(_ type: String.Type) throws -> String { let p = path; return try FMValueDecoder.string(next(), p) }
    mutating func decode(_ type: Double.Type) throws -> Double { let p = path; return try FMValueDecoder.double(next(), p) }
    mutating func decode(_ type: Float.Type) throws -> Float { let p = path; return Float(try FMValueDecoder.double(next(), p)) }
    mutating func decode(_ type: Int.Type) throws -> Int { let p = path; return try FMValueDecoder.integer(Int.self, next(), p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let p = path; return try FMValueDecoder.integer(Int8.self, next(), p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let p = path; return try FMValueDecoder.integer(Int16.self, next(), p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let p = path; return try FMValueDecoder.integer(Int32.self, next(), p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let p = path; return try FMValueDecoder.integer(Int64.self, next(), p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let p = path; return try FMValueDecoder.integer(UInt.self, next(), p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let p = path; return try FMValueDecoder.integer(UInt8.self, next(), p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let p = path; return try FMValueDecoder.integer(UInt16.self, next(), p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let p = path; return try FMValueDecoder.integer(UInt32.self, next(), p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let p = path; return try FMValueDecoder.integer(UInt64.self, next(), p) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let p = path
        let value = try next()
        let decoder = FMValueDecoder(value: value, codingPath: p, options: options)
        // An empty repetition or element read into an optional that cannot hold "" is nil.
        if let text = value as? String, text.isEmpty, let optional = T.self as? any ExpressibleByNilLiteral.Type {
            if let decoded = try? decoder.unbox(T.self) { return decoded }
            if let none = optional.init(nilLiteral: ()) as? T { return none }
        }
        return try decoder.unbox(T.self)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let p = path
        return try FMValueDecoder(value: next(), codingPath: p, options: options).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let p = path
        return try FMValueDecoder(value: next(), codingPath: p, options: options).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let p = path
        return FMValueDecoder(value: try next(), codingPath: p, options: options)
    }
}

private struct FMSingleValueContainer: SingleValueDecodingContainer {
    let decoder: FMValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var value: Any { decoder.value }

    func decodeNil() -> Bool { FMValueDecoder.isNull(value) }
    func decode(_ type: Bool.Type) throws -> Bool { try FMValueDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try FMValueDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try FMValueDecoder.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try FMValueDecoder.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try FMValueDecoder.integer(Int.self, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try FMValueDecoder.integer(Int8.self, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try FMValueDecoder.integer(Int16.self, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try FMValueDecoder.integer(Int32.self, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try FMValueDecoder.integer(Int64.self, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try FMValueDecoder.integer(UInt.self, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try FMValueDecoder.integer(UInt8.self, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try FMValueDecoder.integer(UInt16.self, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try FMValueDecoder.integer(UInt32.self, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try FMValueDecoder.integer(UInt64.self, value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(T.self) }
}

// MARK: - FileMaker dates

/// Reads FileMaker's date, time and timestamp text (every `dateformats`) without `DateFormatter`.
enum FileMakerDate {
    /// The instant `text` names in `timeZone`, or `nil` when it is not a FileMaker date, time or timestamp.
    static func parse(_ text: String, timeZone: TimeZone) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        scanner.skipSpaces()
        var days = 0 // days since 1970-01-01
        var seconds = 0.0
        var hasDate = false
        let start = scanner.index
        if let first = scanner.digits(), scanner.peekSeparator() {
            // A date: yyyy-MM-dd (ISO, format 2), or MM/dd/yyyy (US: formats 0, 1 and the default).
            let separator = scanner.next()
            guard let second = scanner.digits(), scanner.next() == separator, let third = scanner.digits() else { return nil }
            let (year, month, day) = first.count == 4 ? (first.value, second.value, third.value) : (third.value, first.value, second.value)
            guard (first.count == 4 || third.count == 4 || third.count <= 2), (1...12).contains(month),
                  (1...daysIn(month: month, year: year)).contains(day) else { return nil }
            days = daysFromCivil(year: year, month: month, day: day)
            hasDate = true
            if scanner.atEnd || scanner.onlySpacesLeft { return instant(days: days, seconds: 0, timeZone) }
            guard let gap = scanner.next(), gap == UInt8(ascii: " ") || gap == UInt8(ascii: "T") else { return nil }
            scanner.skipSpaces()
        } else {
            scanner.index = start
        }
        guard let time = scanner.time() else { return nil }
        seconds = time
        scanner.skipSpaces()
        guard scanner.atEnd else { return nil }
        if !hasDate { days = 0 }
        return instant(days: days, seconds: seconds, timeZone)
    }

    private static func instant(days: Int, seconds: Double, _ timeZone: TimeZone) -> Date {
        let local = Double(days) * 86_400 + seconds
        if timeZone.secondsFromGMT() == 0, timeZone.identifier == "GMT" || timeZone.identifier == "UTC" || timeZone.identifier.hasPrefix("GMT") {
            return Date(timeIntervalSince1970: local)
        }
        // The offset in force at that local time (found from the offset at the UTC reading, then corrected).
        let guess = Date(timeIntervalSince1970: local - Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: local))))
        return Date(timeIntervalSince1970: local - Double(timeZone.secondsFromGMT(for: guess)))
    }

    static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var onlySpacesLeft: Bool { bytes[index...].allSatisfy { $0 == UInt8(ascii: " ") } }

        mutating func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        }

        /// A date separator: `/`, `-` or `.` (FileMaker accepts any non-letter other than `:` and `+`).
        func peekSeparator() -> Bool {
            guard index < bytes.count else { return false }
            return bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: ".")
        }

        mutating func digits(max: Int = 9) -> (value: Int, count: Int)? {
            var value = 0
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, count < max {
                value = value * 10 + Int(bytes[index] - 0x30)
                count += 1
                index += 1
            }
            return count == 0 ? nil : (value, count)
        }

        /// `H:mm[:ss[.fff]]`, optionally followed by `AM`/`PM`; hours may exceed 24 (a duration).
        mutating func time() -> Double? {
            guard let hours = digits(), next() == UInt8(ascii: ":"), let minutes = digits(max: 2), minutes.value < 60 else { return nil }
            var seconds = 0.0
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                index += 1
                guard let whole = digits(max: 2), whole.value < 60 else { return nil }
                seconds = Double(whole.value)
                if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                    index += 1
                    var scale = 0.1
                    guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
                    while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                        seconds += Double(bytes[index] - 0x30) * scale
                        scale /= 10
                        index += 1
                    }
                }
            }
            var hour = hours.value
            let save = index
            skipSpaces()
            if index + 1 < bytes.count, bytes[index + 1] | 0x20 == UInt8(ascii: "m"),
               bytes[index] | 0x20 == UInt8(ascii: "a") || bytes[index] | 0x20 == UInt8(ascii: "p") {
                guard (1...12).contains(hour) else { return nil }
                let pm = bytes[index] | 0x20 == UInt8(ascii: "p")
                hour = hour % 12 + (pm ? 12 : 0)
                index += 2
            } else {
                index = save
            }
            return Double(hour * 3600 + minutes.value * 60) + seconds
        }
    }
}

extension FMFieldValue {
    /// The value of a parsed JSON element (`JSONSerialization` types).
    init(any value: Any) {
        switch value {
        case let text as String: self = .string(text)
        case let number as NSNumber:
            self = FMValueDecoder.isBoolean(number) ? .bool(number.boolValue) : .number(number.doubleValue)
        case let flag as Bool: self = .bool(flag)
        case let double as Double: self = .number(double)
        case let integer as Int: self = .number(Double(integer))
        case let array as [Any]: self = .array(array.map(FMFieldValue.init(any:)))
        case let object as [String: Any]: self = .object(object.mapValues(FMFieldValue.init(any:)))
        default: self = .null
        }
    }
}
