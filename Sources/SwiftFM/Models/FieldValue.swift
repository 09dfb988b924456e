import Foundation

/// A JSON value read from FileMaker (a field of a portal row, a raw value in typed contexts).
///
/// FileMaker sends numbers as JSON numbers, empty fields as `""`, text (with `\r` paragraph breaks),
/// dates in the `dateformats` format and containers as URLs, all as strings.
public enum FMFieldValue: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A string (text, date, time, timestamp, container URL, or `""` for an empty field).
    case string(String)
    /// A number.
    case number(Double)
    /// A boolean (not a FileMaker field type; kept for completeness).
    case bool(Bool)
    /// A JSON `null` (FileMaker does not send it for fields).
    case null
    /// An array.
    case array([FMFieldValue])
    /// An object.
    case object([String: FMFieldValue])

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode([FMFieldValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: FMFieldValue].self))
        }
    }

    /// Encodes the JSON value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .null: try container.encodeNil()
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as text: strings as they are, numbers without a trailing `.0` when integral.
    public var stringValue: String? {
        switch self {
        case .string(let value): return value
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
            return String(value)
        case .bool(let value): return String(value)
        default: return nil
        }
    }

    /// The value as a number: numbers, and strings that parse as one (`""` gives `nil`).
    public var doubleValue: Double? {
        switch self {
        case .number(let value): return value
        case .string(let value): return Double(value)
        default: return nil
        }
    }

    /// The value as an integer, when it is an integral number or a digit string.
    public var intValue: Int? {
        switch self {
        case .number(let value): return value.rounded() == value && abs(value) < 9e15 ? Int(value) : nil
        case .string(let value): return Int(value)
        default: return nil
        }
    }

    /// The value as a `JSONSerialization`-style object (`String`, `Double`, `Bool`, `NSNull`, arrays, dictionaries).
    public var anyValue: Any {
        switch self {
        case .string(let value): return value
        case .number(let value): return value
        case .bool(let value): return value
        case .null: return NSNull()
        case .array(let value): return value.map(\.anyValue)
        case .object(let value): return value.mapValues(\.anyValue)
        }
    }

    /// A short description of the value.
    public var description: String {
        switch self {
        case .null: return "null"
        case .array(let value): return value.description
        case .object(let value): return value.description
        default: return stringValue ?? ""
        }
    }
}
