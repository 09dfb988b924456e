import Foundation

/// Safe serialisation of caller payloads and parsing of Data API answers.
///
/// Callers hand SwiftFM `[String: Any]` payloads. `JSONSerialization` raises an Objective-C style
/// exception (a crash on Linux) for objects it cannot serialise, so every payload is first
/// *normalised*: walked once, optionals unwrapped, every leaf checked, and anything FileMaker cannot
/// take turned into a ``FMError/ClientCode/invalidArgument`` (`-1002`) error that names the offending path.
///
/// Decision on `nil`: FileMaker rejects `null` anywhere in `fieldData` with 1708 ("Parameter value is
/// invalid"), so `nil` (`Optional.none`) and `NSNull` are rejected client-side with `-1002` before
/// anything is sent; send `""` to clear a field.
enum JSONPayload {

    // MARK: - Requests

    /// Serialises a JSON object payload, or returns the `-1002` error explaining why it cannot be sent.
    static func serialize(_ object: [String: Any]) -> Result<Data, FMError> {
        let clean: Any
        do {
            clean = try normalize(object, path: "$")
        } catch {
            return .failure(error)
        }
        guard JSONSerialization.isValidJSONObject(clean) else {
            return .failure(.invalidArgument("The payload is not JSON-serialisable"))
        }
        do {
            return .success(try JSONSerialization.data(withJSONObject: clean, options: [.sortedKeys, .withoutEscapingSlashes]))
        } catch {
            return .failure(FMError(code: FMError.ClientCode.invalidArgument,
                                    message: "The payload is not JSON-serialisable",
                                    underlying: String(describing: error)))
        }
    }

    /// Encodes an `Encodable` value into a JSON object (the `fieldData` of the typed writes), or `-1002`.
    ///
    /// `nil` properties are left out by synthesised `Encodable` conformances; a value that encodes an
    /// explicit `null`, a non-finite number or something other than an object gives `-1002`.
    static func object<E: Encodable>(_ value: E) -> Result<[String: Any], FMError> {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            return .failure(FMError(code: FMError.ClientCode.invalidArgument, message: "The fields cannot be encoded as JSON",
                                    underlying: String(describing: error)))
        }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            return .failure(.invalidArgument("The fields must encode as a JSON object (a struct or a dictionary)"))
        }
        return .success(object)
    }

    /// Serialises a small JSON value used inside a query string (`_sort`, `portal`): sorted keys, no spaces.
    static func queryString(_ value: Any) -> String {
        guard JSONSerialization.isValidJSONObject(value),
              let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]),
              let text = String(data: data, encoding: .utf8) else { return "[]" }
        return text
    }

    /// The deepest nesting a payload may have (a Data API body nests some 5 levels): deeper is `-1002`, never a
    /// stack overflow (the walk below recurses once per level, on whatever thread the caller is).
    static let maxPayloadDepth = 64

    /// Walks `value` once and returns a tree that `JSONSerialization` accepts, or throws `-1002`.
    static func normalize(_ value: Any, path: String, depth: Int = 0) throws(FMError) -> Any {
        guard depth <= maxPayloadDepth else {
            throw FMError.invalidArgument("The payload nests deeper than \(maxPayloadDepth) levels (at \(path.prefix(100))…)")
        }
        // Optionals hidden inside `Any` (`["a": someOptional]`): unwrap, and reject `nil`.
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let child = mirror.children.first else { throw nullError(path) }
            return try normalize(child.value, path: path, depth: depth + 1)
        }
        // Class instances from JSONSerialization or Objective-C style code keep their exact value
        // (an `NSNumber` 1 must stay a number, not become `true`).
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            guard number.doubleValue.isFinite else { throw nonFinite(path) }
            return number
        }
        // Containers before scalars: casting a nested array to a class (`NSNumber`, `NSString`) bridges the whole
        // tree first, recursively (a stack overflow for a payload nested thousands deep), where these casts do not.
        if let dictionary = value as? [String: Any] {
            var clean: [String: Any] = [:]
            clean.reserveCapacity(dictionary.count)
            for (key, element) in dictionary {
                clean[key] = try normalize(element, path: path + "." + key, depth: depth + 1)
            }
            return clean
        }
        if let array = value as? [Any] {
            var clean: [Any] = []
            clean.reserveCapacity(array.count)
            for (index, element) in array.enumerated() {
                clean.append(try normalize(element, path: path + "[\(index)]", depth: depth + 1))
            }
            return clean
        }
        switch value {
        case is NSNull:
            throw nullError(path)
        case let text as String:
            return text
        case let text as Substring:
            return String(text)
        case let flag as Bool:
            return flag
        case let number as Int: return number
        case let number as Int8: return Int(number)
        case let number as Int16: return Int(number)
        case let number as Int32: return Int(number)
        case let number as Int64: return number
        case let number as UInt: return number
        case let number as UInt8: return Int(number)
        case let number as UInt16: return Int(number)
        case let number as UInt32: return Int(number)
        case let number as UInt64: return number
        case let number as Double:
            guard number.isFinite else { throw nonFinite(path) }
            return number
        case let number as Float:
            guard number.isFinite else { throw nonFinite(path) }
            return Double(number)
        case let number as Decimal:
            guard !number.isNaN else { throw nonFinite(path) }
            return NSDecimalNumber(decimal: number)
        case let number as NSNumber:
            guard number.doubleValue.isFinite else { throw nonFinite(path) }
            return number
        case let text as NSString:
            return String(describing: text)
        default:
            throw FMError.invalidArgument(
                "The value at \(path) (\(type(of: value))) is not JSON-serialisable; send strings, numbers, arrays or dictionaries")
        }
    }

    private static func nullError(_ path: String) -> FMError {
        .invalidArgument("The value at \(path) is nil/null; FileMaker rejects null values (1708). Send \"\" to clear a field")
    }

    private static func nonFinite(_ path: String) -> FMError {
        .invalidArgument("The number at \(path) is NaN or infinite, which JSON cannot carry")
    }
}

// MARK: - Lenient decoding helpers

/// A coding key made from any string (script keys such as `scriptResult.prerequest`, field names).
struct AnyCodingKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { self.stringValue = string; self.intValue = nil }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

extension KeyedDecodingContainer {
    /// Decodes a value FileMaker sends as a string but some servers or proxies send as a number
    /// (`recordId`, `modId`, `scriptError`).
    func lenientString(_ key: Key) throws -> String? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        if let number = try? decode(Int.self, forKey: key) { return String(number) }
        if let number = try? decode(Double.self, forKey: key) { return String(number) }
        if let flag = try? decode(Bool.self, forKey: key) { return String(flag) }
        throw DecodingError.typeMismatch(String.self, .init(codingPath: codingPath + [key], debugDescription: "expected a string or a number"))
    }

    /// Decodes a count FileMaker sends as a number but some fixtures show as a digit string.
    func lenientInt(_ key: Key) throws -> Int? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let number = try? decode(Int.self, forKey: key) { return number }
        if let text = try? decode(String.self, forKey: key), let number = Int(text) { return number }
        throw DecodingError.typeMismatch(Int.self, .init(codingPath: codingPath + [key], debugDescription: "expected an integer"))
    }

    /// Decodes a boolean sent as a JSON boolean, `"true"`/`"false"` or `1`/`0`.
    func lenientBool(_ key: Key) throws -> Bool? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let flag = try? decode(Bool.self, forKey: key) { return flag }
        if let text = try? decode(String.self, forKey: key) { return text.lowercased() == "true" || text == "1" }
        if let number = try? decode(Int.self, forKey: key) { return number != 0 }
        throw DecodingError.typeMismatch(Bool.self, .init(codingPath: codingPath + [key], debugDescription: "expected a boolean"))
    }
}
