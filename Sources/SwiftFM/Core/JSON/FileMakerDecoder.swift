import Foundation

/// Decodes the caller's `Decodable` types from Data API answers with the rules real FileMaker data needs,
/// reading each value straight from the answer's bytes (``JSONTape``): no intermediate tree, no dictionary
/// per record, no string for a number.
///
/// * An empty field is `""` for every field type: an optional property that cannot hold `""` (a number,
///   a date, an enum without an empty case) reads it as `nil`. A non-optional one fails.
/// * Numbers sent as text (`"42"`, `" 3.5 "`) decode into numeric properties (a number into a `String`
///   property is still a mismatch); `Bool` takes `true`/`false`, `1`/`0` and their text forms. One rule for
///   every numeric type (`Int`s, `Double`, `Float`, `Decimal`): text is a number when, trimmed of spaces,
///   it is a decimal number (an optional sign, digits with an optional point, an optional exponent:
///   `-3.5`, `+2`, `.5`, `1e3`); anything else (hex `0x10`, `inf`, `nan`, `1,000`, words) is a type
///   mismatch, never a guess.
/// * `Double` and `Float` are correctly rounded, from JSON numbers and from text alike: the same bits as
///   Swift's `Double(String)`/`Float(String)` give for the number's characters, `-0` included.
/// * A key sent twice in one object reads its last value, as `JSONSerialization` (the raw records) does.
/// * Dates, times and timestamps decode into `Date` from every `dateformats` FileMaker writes: US
///   `MM/dd/yyyy` (formats 0 and 1, and the server default), ISO `yyyy-MM-dd` (format 2), with an optional
///   time `HH:mm:ss[.fff]` (24-hour, or 12-hour with `AM`/`PM`) after a space or `T`. A time alone is that
///   time on 1970-01-01. FileMaker values carry no time zone: they are read in ``timeZone`` (UTC unless the
///   call says otherwise). A JSON number decodes as `JSONDecoder`'s default (seconds since 2001-01-01).
/// * Repetitions: a property whose type is an array reads a repeating field's `name`, `name(2)`,
///   `name(3)`, … each at its place (trailing empty repetitions left out); a key `name(1)` also finds `name`,
///   and `name` finds `name(1)` (portal rows send `TO::field(1)`). A key `name(2)` reads that repetition.
///   A repetition the layout did not send, before one it did (a layout showing repetitions 1 and 3, or
///   from 2 on), is an empty value at its place: `""` in a `[String]`, `nil` in an array of optionals (a
///   non-optional number or date fails, as for an empty field); an array is read even when only later
///   repetitions were sent. Repetition numbers above FileMaker's 32,000 are not repetitions.
struct FileMakerDecoder {
    /// The zone FileMaker dates, times and timestamps are read in.
    var timeZone: TimeZone
    /// The most threads a found set of at least ``splitFrom`` bytes is decoded on (``ParallelParts``); 1 (the
    /// default): every record on the calling thread. Above 1 only when ``FMConfiguration/parallelDecoding`` is on.
    var parts: Int

    init(timeZone: TimeZone? = nil, parts: Int = 1) {
        self.timeZone = timeZone ?? FileMakerDecoder.utc
        self.parts = parts
    }

    static let utc = TimeZone(secondsFromGMT: 0) ?? TimeZone.current

    /// This decoder, decoding a large found set on up to `parts` threads.
    func parts(_ parts: Int) -> FileMakerDecoder {
        var copy = self
        copy.parts = parts
        return copy
    }

    /// Decodes `T` from a `JSONSerialization`-shaped value (a portal row's fields, records built in code):
    /// the value is written as JSON and read like an answer, so every path follows the same rules. `numbers`:
    /// members added to the object `value` as written (a key and the characters of a JSON number read from an
    /// answer), so that no digit is lost to `Double`.
    func decode<T: Decodable>(_ type: T.Type, from value: Any, numbers: [(key: String, text: String)] = []) throws -> T {
        // Checked first: `JSONSerialization` raises an exception (a crash on Apple platforms) on a value JSON
        // cannot hold.
        guard JSONSerialization.isValidJSONObject([value]) else {
            let field = (value as? [String: Any])?.first { !JSONSerialization.isValidJSONObject([$0.value]) }?.key
            throw DecodingError.dataCorrupted(.init(codingPath: field.map { [AnyCodingKey($0)] } ?? [], debugDescription: Self.notJSON))
        }
        var data: Data
        do {
            data = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])
            if !numbers.isEmpty, value is [String: Any], data.last == UInt8(ascii: "}") {
                // `{…}` becomes `{…,"key":text…}` (`{"key":text…}` when `value` is empty).
                data.removeLast()
                var first = data.count == 1
                for (key, text) in numbers {
                    let quoted = try JSONSerialization.data(withJSONObject: [key])   // `["key"]`
                    if !first { data.append(UInt8(ascii: ",")) }
                    first = false
                    data.append(quoted.dropFirst().dropLast())
                    data.append(UInt8(ascii: ":"))
                    data.append(contentsOf: text.utf8)
                }
                data.append(UInt8(ascii: "}"))
            }
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "the value cannot be written as JSON"))
        }
        return try data.withUnsafeBytes { bytes in
            let tape = try JSONTape(bytes, fragments: true)
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            return try TapeDecoder(reader, node: 0, codingPath: [], options: self).unbox(T.self)
        }
    }

    /// Decodes `T` from member `key` of the JSON object in `body` (an OData collection's `value`), read from the
    /// bytes in one pass, and hands back every other member as plain values (`@odata.count`, the next link).
    /// `nil` when the body is not an object holding `key`; a value that does not decode throws.
    func decodeMember<T: Decodable>(_ type: T.Type, _ key: String, of body: Data) throws -> (value: T, others: [String: Any])? {
        try body.withUnsafeBytes { bytes in
            let tape = try JSONTape(bytes, fragments: false)
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            guard reader.nodes.first?.kind == .object else { return nil }
            var member: Int?
            var others: [String: Any] = [:]
            reader.forEachMember(of: 0) { name, value in
                let text = reader.string(name)
                if text == key { member = value } else { others[text] = reader.any(value) }
            }
            guard let member else { return nil }
            return (try TapeDecoder(reader, node: member, codingPath: [], options: self).unbox(T.self), others)
        }
    }

    /// Reads a found-set answer's bytes (`response.data`, `dataInfo`, script keys) into typed records.
    /// A record that does not decode gives `-1007` naming the record id and the field.
    func foundSet<T: Decodable>(_ type: T.Type, body: Data, status: Int, checkMessages: Bool = false) throws(FMError) -> FMTypedFoundSet<T> {
        let result: Result<FMTypedFoundSet<T>, FMError> = body.withUnsafeBytes { bytes in
            // With parts allowed, a large found set is read and decoded in parts on several threads; whatever the
            // parts do not finish (bytes that are not JSON, a record that does not decode, an answer of another
            // shape) is done again below in one part, which reports it exactly as it always has.
            if parts > 1, bytes.count >= Self.splitFrom,
               let tape = try? JSONTape(bytes, splitFrom: Self.splitFrom, parts: parts), let deferred = tape.deferred {
                let reader = JSONTapeReader(bytes: bytes, tape: tape)
                defer { reader.close() }
                if let set = try? foundSet(T.self, reader, status: status, checkMessages: checkMessages, deferred: deferred) {
                    return .success(set)
                }
            }
            let tape: JSONTape
            do {
                tape = try JSONTape(bytes)
            } catch {
                let failure = checkMessages && !Envelope.looksLikeJSON(body)
                    ? FMError.notJSON(status: status)
                    : FMError(code: FMError.ClientCode.malformedResponse, message: "Unexpected response: the body is not valid JSON",
                              httpStatus: status, underlying: FMError.underlyingText(error))
                return .failure(failure)
            }
            let reader = JSONTapeReader(bytes: bytes, tape: tape)
            defer { reader.close() }
            do throws(FMError) {
                return .success(try foundSet(T.self, reader, status: status, checkMessages: checkMessages))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Records the caller built as `JSONSerialization` values (``FMFoundSet`` made in code): written as
    /// JSON once and read like an answer.
    func records<T: Decodable>(_ type: T.Type, _ data: [Any], status: Int) throws(FMError) -> [FMRecord<T>] {
        // Checked first, as in ``decode(_:from:)``; the error names the record and the field.
        if !JSONSerialization.isValidJSONObject(data) {
            for (index, element) in data.enumerated() where !JSONSerialization.isValidJSONObject([element]) {
                let record = element as? [String: Any]
                let name = RawJSON.string(record?["recordId"]).map { "record \($0)" } ?? "record \(index + 1) of the found set"
                let field = (record?["fieldData"] as? [String: Any])?.first { !JSONSerialization.isValidJSONObject([$0.value]) }?.key
                throw FMError.malformed("\(name)\(field.map { ", field \($0)" } ?? ""): \(Self.notJSON)", status: status)
            }
        }
        let body: Data
        do {
            body = try JSONSerialization.data(withJSONObject: ["response": ["data": data]])
        } catch {
            throw FMError.malformed("the records cannot be written as JSON", status: status)
        }
        return try foundSet(T.self, body: body, status: status).records
    }

    /// Answers of at least this many bytes have their `data` read and decoded in parts when ``parts`` allows it
    /// (as the raw records' reader does).
    static let splitFrom = 1 << 20

    /// ``foundSet(_:body:status:checkMessages:)`` over an open reader; `deferred`: its `data` array was left
    /// unread, to be read and decoded in parts.
    func foundSet<T: Decodable>(_ type: T.Type, _ reader: JSONTapeReader, status: Int, checkMessages: Bool,
                                deferred: JSONTape.Deferred? = nil) throws(FMError) -> FMTypedFoundSet<T> {
        guard reader.nodes[0].kind == .object else { throw FMError.malformed("the body is not a JSON object", status: status) }
        if checkMessages {
            var envelope: [String: Any] = [:]
            if let messages = reader.value(forKey: "messages", in: 0) { envelope["messages"] = reader.any(messages) }
            switch Envelope.firstMessage(in: envelope) {
            case .success(let message):
                guard message.code == "0" else { throw Envelope.failure(message, status: status) }
            case .failure(let error):
                throw error
            }
        }
        guard let response = reader.value(forKey: "response", in: 0), reader.nodes[response].kind == .object else {
            throw FMError.malformed("no \"response\" object", status: status)
        }
        // Everything but the records, as plain values: dataInfo and the script keys.
        var others: [String: Any] = [:]
        var data: Int?
        reader.forEachMember(of: response) { key, value in
            let name = reader.string(key)
            if name == "data" { data = value } else { others[name] = reader.any(value) }
        }
        guard let data, reader.nodes[data].kind == .array else {
            throw FMError.malformed("no \"data\" array in the found set", status: status)
        }
        let decoded: DecodedRecords<T>
        if let deferred {
            guard deferred.node == data else { throw FMError.malformed("the array read in parts is not the found set's data", status: status) }
            decoded = try recordsInParts(T.self, reader, deferred, status: status)
        } else {
            decoded = try self.records(T.self, reader, array: data, status: status)
        }
        var set = FMTypedFoundSet(records: decoded.records, dataInfo: try FMDataInfo.checked(raw: others["dataInfo"] as? [String: Any], status: status),
                                  scripts: try FMScriptResults(raw: others, status: status))
        set.contentKeys = decoded.contentKeys
        return set
    }

    /// The records of array node `array`, in order, portals filled; and the content of each whose `recordId` is
    /// empty (``FMTypedFoundSet/contentKeys``).
    fileprivate func records<T: Decodable>(_ type: T.Type, _ reader: JSONTapeReader, array: Int, status: Int) throws(FMError) -> DecodedRecords<T> {
        var decoded = DecodedRecords<T>()
        decoded.records.reserveCapacity(Int(reader.nodes[array].count))
        let decoder = TapeDecoder(reader, node: array, codingPath: [], options: self)
        let fillsPortals = LayoutPortals.fills(T.self)
        var index = 0
        var element = array + 1
        let end = reader.nodes[array].end
        while element < end {
            var next = try record(T.self, decoder: decoder, node: element, index: index, status: status)
            if fillsPortals, !next.portalData.isEmpty {
                do {
                    next.fieldData = try LayoutPortals.fill(next.fieldData, next.portalData, timeZone: timeZone)
                } catch {
                    throw FMError(code: FMError.ClientCode.malformedResponse,
                                  message: "Unexpected response: record \(FMError.serverText(next.recordId, limit: 100)): \((error as? FMError)?.message ?? Self.describe(error))",
                                  httpStatus: status, underlying: FMError.underlyingText(error))
                }
            }
            if next.recordId.isEmpty {
                decoded.contentKeys[index] = RecordKey.content(reader.any(element) as? [String: Any] ?? [:])
            }
            decoded.records.append(next)
            index += 1
            element = reader.next(after: element)
        }
        return decoded
    }

    /// The records of a deferred `data` array, each part indexed and decoded on its own core (its own tape,
    /// reader and decoder), joined in order. Any failure in a part fails the whole (the caller then reads the
    /// answer in one part, for the error as the serial reading reports it).
    private func recordsInParts<T: Decodable>(_ type: T.Type, _ reader: JSONTapeReader, _ deferred: JSONTape.Deferred,
                                              status: Int) throws(FMError) -> DecodedRecords<T> {
        let partReader = TypedPartReader<T>(options: self, depth: Int(reader.nodes[deferred.node].depth), status: status)
        guard let parts = ParallelParts.read(reader.bytes, deferred.split, with: partReader) else {
            throw FMError.malformed("a part of the found set was not read", status: status)
        }
        var joined = DecodedRecords<T>()
        for part in parts {
            guard let decoded = part else { throw FMError.malformed("a part of the found set was not read", status: status) }
            if joined.records.isEmpty { joined.records.reserveCapacity(decoded.records.count * parts.count) }
            for (index, key) in decoded.contentKeys { joined.contentKeys[joined.records.count + index] = key }
            joined.records.append(contentsOf: decoded.records)
        }
        return joined
    }

    /// One record of `data`: `recordId`, `modId`, `fieldData` decoded into `T`, `portalData`, `portalDataInfo`.
    private func record<T: Decodable>(_ type: T.Type, decoder: TapeDecoder, node: Int, index: Int, status: Int) throws(FMError) -> FMRecord<T> {
        let reader = decoder.reader
        guard reader.nodes[node].kind == .object else {
            throw FMError.malformed("record \(index + 1) of \"data\" is not an object", status: status)
        }
        var recordId: String?, modId: String?, fields: Int?, portals: Int?, portalInfo: Int?
        reader.forEachMember(of: node) { key, value in
            let token = reader.token(key)
            if token.equals("fieldData", reader.bytes) { fields = value }
            else if token.equals("recordId", reader.bytes) { recordId = reader.text(value) }
            else if token.equals("modId", reader.bytes) { modId = reader.text(value) }
            else if token.equals("portalData", reader.bytes) { portals = value }
            else if token.equals("portalDataInfo", reader.bytes) { portalInfo = value }
        }
        // The record's name in an error (written only when one is thrown: a found set has thousands of records).
        func name() -> String { recordId.map { "record \(FMError.serverText($0, limit: 100))" } ?? "record \(index + 1) of the found set" }
        guard let recordId else { throw FMError.malformed("\(name()) has no recordId", status: status) }
        guard let fields, reader.nodes[fields].kind == .object else {
            throw FMError.malformed("\(name()) has no fieldData object", status: status)
        }
        let fieldData: T
        do {
            fieldData = try decoder.child(fields, codingPath: []).unbox(T.self)
        } catch {
            throw FMError(code: FMError.ClientCode.malformedResponse,
                          message: "Unexpected response: \(name()) cannot be read as \(T.self): \(Self.describe(error))",
                          httpStatus: status, underlying: FMError.underlyingText(error))
        }
        var portalData: [String: [FMPortalRow]] = [:]
        if let portals, reader.nodes[portals].kind == .object {
            var failure: FMError?
            reader.forEachMember(of: portals) { key, rows in
                guard failure == nil else { return }
                let portal = reader.string(key)
                guard reader.nodes[rows].kind == .array else {
                    failure = FMError.malformed("\(name()): portal \(FMError.serverText(portal, limit: 100)) is not an array", status: status)
                    return
                }
                var parsed: [FMPortalRow] = []
                parsed.reserveCapacity(Int(reader.nodes[rows].count))
                for row in reader.members(of: rows) {
                    guard reader.nodes[row].kind == .object, let rowId = reader.value(forKey: "recordId", in: row).flatMap(reader.text) else {
                        failure = FMError.malformed("\(name()): a row of portal \(FMError.serverText(portal, limit: 100)) has no recordId", status: status)
                        return
                    }
                    var values: [String: FMFieldValue] = [:]
                    var texts: [String: String] = [:]
                    var rowModId: String?
                    reader.forEachMember(of: row) { key, value in
                        let field = reader.string(key)
                        if field == "modId" { rowModId = reader.text(value) } else if field != "recordId" {
                            values[field] = reader.fieldValue(value)
                            // A number longer than a `Double` holds keeps its characters for `FMPortalRow.decode`.
                            if reader.nodes[value].kind == .number, let number = reader.number(value), number.end - number.start > 15 {
                                texts[field] = number.text(reader.bytes)
                            } else if !texts.isEmpty {
                                texts[field] = nil   // a key sent twice: its last value counts
                            }
                        }
                    }
                    parsed.append(FMPortalRow(recordId: rowId, modId: rowModId, fields: values, numberTexts: texts))
                }
                portalData[portal] = parsed
            }
            if let failure { throw failure }
        }
        let info = try FMPortalDataInfo.checked(raw: portalInfo.flatMap { reader.any($0) as? [Any] }, status: status)
        return FMRecord(recordId: recordId, modId: modId ?? "", fieldData: fieldData, portalData: portalData, portalDataInfo: info)
    }

    /// Why a value made in code cannot be decoded.
    static let notJSON = "a value made in code that JSON cannot hold (NaN, infinity, or not a JSON type)"

    /// "field `price`: expected Double, found text" — the path and the problem, never the value. The one
    /// description of a decoding error, for typed records and for every other answer the client decodes.
    ///
    /// - Parameter withDetails: adds the error's own `debugDescription`. This decoder never puts a value in
    ///   it; `JSONDecoder` may (an out-of-range number), so answers it decoded are described without it.
    static func describe(_ error: any Error, withDetails: Bool = true) -> String {
        guard let decoding = error as? DecodingError else { return String(describing: error) }
        func field(_ path: [any CodingKey]) -> String {
            guard !path.isEmpty else { return "the record" }
            // A field's name is the server's (a dictionary's key): printable and short, as its other words.
            return "field " + path.map { $0.intValue.map { "[\($0)]" } ?? FMError.serverText($0.stringValue, limit: 100) }.joined(separator: ".")
        }
        switch decoding {
        case .keyNotFound(let key, let context):
            return "\(field(context.codingPath + [key])) is missing"
        case .typeMismatch(let type, let context):
            return "\(field(context.codingPath)): expected \(type)" + (withDetails ? "; " + context.debugDescription : "")
        case .valueNotFound(let type, let context):
            return "\(field(context.codingPath)) is empty (expected \(type); make the property optional)"
        case .dataCorrupted(let context):
            return "\(field(context.codingPath)): " + (withDetails ? context.debugDescription : "not what was expected")
        @unknown default:
            return "decoding failed"
        }
    }
}

/// The records of a found set's `data` (or of one part of it), and the content of each record whose `recordId` is
/// empty by its index there (``FMTypedFoundSet/contentKeys``).
struct DecodedRecords<T: Decodable> {
    var records: [FMRecord<T>] = []
    var contentKeys: [Int: String] = [:]
}

/// Indexes and decodes one part of a found set's `data` (its own tape, reader and decoder); `nil` on any
/// failure (the answer is then read again in one part). It holds no `T` value, only the decoding options.
private struct TypedPartReader<T: Decodable>: PartReading {
    let options: FileMakerDecoder
    let depth: Int
    let status: Int

    func read(_ bytes: UnsafeRawBufferPointer, start: Int, last: Bool) -> DecodedRecords<T>? {
        guard let tape = try? JSONTape(part: bytes, start: start, last: last, depth: depth) else { return nil }
        let reader = JSONTapeReader(bytes: bytes, tape: tape)
        defer { reader.close() }
        return try? options.records(T.self, reader, array: 0, status: status)
    }
}

// MARK: - FileMaker values read from the tape

extension JSONTapeReader {
    /// A string's text or a number's characters (ids: `recordId`, `modId`); `nil` for anything else.
    func text(_ index: Int) -> String? {
        switch nodes[index].kind {
        case .string, .key: return string(index)
        case .number: return number(index)?.text(bytes)
        default: return nil
        }
    }

    /// Which repetition of the field `key` (`name`: its UTF-8) a key node names: 0 for `key`, n for `key(n)`
    /// (n in decimal without a leading zero, as FileMaker writes it); `nil` for another key. The name is
    /// compared as ``keyEquals(_:_:)`` does.
    func repetition(_ index: Int, of key: String, _ name: UnsafeBufferPointer<UInt8>, nameIsASCII: Bool) -> Int? {
        let node = nodes[index]
        if !node.escaped, let found = Self.repetition(UnsafeRawBufferPointer(rebasing: bytes[node.start..<node.end]), of: name) { return found }
        guard node.escaped || node.nonASCII || !nameIsASCII else { return nil }
        let text = string(index)
        if text == key { return 0 }
        guard text.last == ")", let open = text.lastIndex(of: "(") else { return nil }
        let digits = text[text.index(after: open)..<text.index(before: text.endIndex)]
        guard (1...9).contains(digits.utf8.count), digits.first != "0", digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(digits), String(text[..<open]) == key else { return nil }
        return value
    }

    private static func repetition(_ key: UnsafeRawBufferPointer, of name: UnsafeBufferPointer<UInt8>) -> Int? {
        guard key.count >= name.count, name.isEmpty || memcmp(key.baseAddress!, name.baseAddress!, name.count) == 0 else { return nil }
        if key.count == name.count { return 0 }
        let digits = key.count - name.count - 2
        guard (1...9).contains(digits), key[name.count] == UInt8(ascii: "("), key[key.count - 1] == UInt8(ascii: ")"),
              key[name.count + 1] != UInt8(ascii: "0") else { return nil }
        var value = 0
        for byte in key[(name.count + 1)..<(key.count - 1)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// The value as an ``FMFieldValue``.
    func fieldValue(_ index: Int) -> FMFieldValue {
        switch nodes[index].kind {
        case .string, .key: return .string(string(index))
        case .number: return .number(double(index) ?? .nan)
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return .null
        case .array: return .array(members(of: index).map(fieldValue))
        case .object:
            var object: [String: FMFieldValue] = [:]
            forEachMember(of: index) { key, value in object[string(key)] = fieldValue(value) }
            return .object(object)
        }
    }

    /// A number node's value as a `Double`, correctly rounded: the bits `Double(String)` gives for its
    /// characters (`-0` keeps its sign).
    func double(_ index: Int) -> Double? {
        number(index)?.double(bytes)
    }

    /// A number node's value as a `Float`, correctly rounded (the bits `Float(String)` gives; infinite
    /// beyond `Float`'s range). Never through `Double`: rounding twice can be one unit off.
    func float(_ index: Int) -> Float? {
        number(index)?.float(bytes)
    }

    /// How a mismatch names what was found.
    func kind(_ index: Int) -> String {
        switch nodes[index].kind {
        case .string, .key: return isEmptyString(index) ? "an empty value" : "text"
        case .null: return "null"
        case .array: return "an array"
        case .object: return "an object"
        case .number, .true, .false: return "a number"
        }
    }
}

/// The FileMaker rules for one value node.
private enum Rules {
    static func mismatch(_ type: Any.Type, _ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path(), debugDescription: "found \(reader.kind(node))"))
    }

    /// Whether `text` (already trimmed) is a decimal number: an optional sign, digits with an optional point
    /// (at least one digit), an optional exponent. The one rule for numbers sent as text, every numeric type.
    static func isDecimalNumber(_ text: String) -> Bool {
        var utf8 = text.utf8[...]
        if let sign = utf8.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { utf8 = utf8.dropFirst() }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let whole = utf8.prefix(while: isDigit).count
        utf8 = utf8.dropFirst(whole)
        var fraction = 0
        if utf8.first == UInt8(ascii: ".") {
            utf8 = utf8.dropFirst()
            fraction = utf8.prefix(while: isDigit).count
            utf8 = utf8.dropFirst(fraction)
        }
        guard whole + fraction > 0 else { return false }
        if let e = utf8.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            utf8 = utf8.dropFirst()
            if let sign = utf8.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { utf8 = utf8.dropFirst() }
            let digits = utf8.prefix(while: isDigit).count
            guard digits > 0 else { return false }
            utf8 = utf8.dropFirst(digits)
        }
        return utf8.isEmpty
    }

    /// The decimal number a text holds (`"42"`, `" -3.5 "`), trimmed of spaces; `nil` when it is not one.
    static func decimalText(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return isDecimalNumber(trimmed) ? trimmed : nil
    }

    static func outOfRange(_ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        .dataCorrupted(.init(codingPath: path, debugDescription: "the number does not fit in \(type)"))
    }

    /// Why a number is no `type`: a fraction (4.5 read into an `Int`) says so and what to declare instead; a whole
    /// number says it does not fit. Never the value (record data stays out of errors and logs).
    static func notAnInteger(_ type: Any.Type, _ value: Double?, _ path: [any CodingKey]) -> DecodingError {
        guard let value, value.isFinite, value.rounded(.towardZero) != value else { return outOfRange(type, path) }
        return .dataCorrupted(.init(codingPath: path, debugDescription:
            "the number is not a whole number; \(type) holds whole numbers only: declare the property Double or Decimal"))
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        switch reader.nodes[node].kind {
        case .number:
            guard let token = reader.number(node) else { break }
            if let exact = token.exactInt64 { if let value = I(exactly: exact) { return value } }
            else if let exact = token.exactUInt64, let value = I(exactly: exact) { return value }
            if let double = reader.double(node), abs(double) < 9_007_199_254_740_992, let exact = I(exactly: double) { return exact }
            if let exact = I(token.text(reader.bytes)) { return exact }
            throw notAnInteger(I.self, reader.double(node), path())
        case .string:
            guard let trimmed = decimalText(reader.string(node)) else { break }
            if let exact = I(trimmed) { return exact }
            guard let double = Double(trimmed) else { break }
            if abs(double) < 9_007_199_254_740_992, let exact = I(exactly: double) { return exact }
            throw notAnInteger(I.self, double, path())
        default:
            break
        }
        throw mismatch(I.self, reader, node, path())
    }

    /// A `Double`, correctly rounded (text beyond its range fails instead of reading infinity).
    static func double(_ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch reader.nodes[node].kind {
        case .number:
            if let value = reader.double(node) { return value }
        case .string:
            guard let text = decimalText(reader.string(node)), let value = Double(text) else { break }
            guard value.isFinite else { throw outOfRange(Double.self, path()) }
            return value
        default:
            break
        }
        throw mismatch(Double.self, reader, node, path())
    }

    /// A `Float`, correctly rounded from the number's characters (a number beyond its range fails, as
    /// `JSONDecoder`, instead of reading infinity).
    static func float(_ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let value: Float?
        switch reader.nodes[node].kind {
        case .number: value = reader.float(node)
        case .string: value = decimalText(reader.string(node)).flatMap { Float($0) }
        default: value = nil
        }
        guard let value else { throw mismatch(Float.self, reader, node, path()) }
        guard value.isFinite else { throw outOfRange(Float.self, path()) }
        return value
    }

    /// A `URL` from text (a container field), as `JSONDecoder` reads it.
    static func url(_ reader: JSONTapeReader, _ node: Int, _ path: [any CodingKey]) throws -> URL {
        guard reader.nodes[node].kind == .string else { throw mismatch(URL.self, reader, node, path) }
        guard let url = URL(string: reader.string(node)) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription:
                reader.isEmptyString(node) ? "an empty value is not a URL" : "not a URL"))
        }
        return url
    }

    static func string(_ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        // A number does not read as text: a number where text is expected is a layout the type does not match.
        guard reader.nodes[node].kind == .string else { throw mismatch(String.self, reader, node, path()) }
        return reader.string(node)
    }

    static func bool(_ reader: JSONTapeReader, _ node: Int, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch reader.nodes[node].kind {
        case .true: return true
        case .false: return false
        case .string:
            switch reader.string(node).trimmingCharacters(in: .whitespaces).lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: break
            }
        case .number:
            switch reader.double(node) {
            case 1: return true
            case 0: return false
            default: break
            }
        default:
            break
        }
        throw mismatch(Bool.self, reader, node, path())
    }

    static func decimal(_ reader: JSONTapeReader, _ node: Int, _ path: [any CodingKey]) throws -> Decimal {
        let posix = Locale(identifier: "en_US_POSIX")
        switch reader.nodes[node].kind {
        case .string:
            guard let trimmed = decimalText(reader.string(node)) else { break }
            if let decimal = Decimal(string: trimmed, locale: posix), decimal.isFinite { return decimal }
            throw outOfRange(Decimal.self, path)
        case .number:
            // The tape checked the number's grammar: a number `Decimal` does not read is out of its range (FileMaker's
            // numbers reach 400 digits), never a number where something else was expected.
            guard let text = reader.number(node)?.text(reader.bytes) else { break }
            if let decimal = Decimal(string: text, locale: posix), decimal.isFinite { return decimal }
            throw outOfRange(Decimal.self, path)
        default:
            break
        }
        throw mismatch(Decimal.self, reader, node, path)
    }

    static func date(_ reader: JSONTapeReader, _ node: Int, _ options: FileMakerDecoder, _ path: [any CodingKey]) throws -> Date {
        switch reader.nodes[node].kind {
        case .string:
            if let date = reader.withRawText(node, { FileMakerDate.parse(bytes: $0, timeZone: options.timeZone) }) { return date }
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription:
                reader.isEmptyString(node) ? "an empty value is not a date" : "not a FileMaker date, time or timestamp"))
        case .number:
            if let seconds = reader.double(node) { return Date(timeIntervalSinceReferenceDate: seconds) }
        default:
            break
        }
        throw mismatch(Date.self, reader, node, path)
    }

    /// FileMaker's most repetitions of a field: a key `name(n)` with a larger `n` is not a repetition.
    static let maxRepetitions = 32_000

    /// The place of a repetition the layout did not send, in ``repetitions(of:in:_:_:)``: read as an empty value.
    static let gap = -1

    /// A repeating field's value nodes by place: `key` (or `key(1)`) first, `key(n)` at place n, up to the last
    /// repetition that is not empty (trailing empty repetitions left out). A place before it that the layout
    /// did not send is ``gap``: the field's other repetitions keep their places (a layout may show repetitions
    /// 1 and 3 of a field, or 2 to 4).
    /// One pass over the object (a lookup per repetition would be quadratic on a hostile answer); a key
    /// that repeats: the last one, as ``JSONTapeReader/value(forKey:in:)``. The gaps of one answer are bounded by
    /// its size (``JSONTapeReader/gapsLeft``), so that a few bytes (`"name(32000)":"x"` in every record) cannot
    /// make a decode hold far more than the answer: beyond it, a `dataCorrupted` error at `path`.
    static func repetitions(of key: String, in object: Int, _ reader: JSONTapeReader, _ path: [any CodingKey]) throws -> [Int] {
        var plain: Int?, first: Int?
        // The later repetitions sent, as found (never one slot per number: `name(32000)` is one entry).
        var numbered: [(repetition: Int, order: Int, value: Int)] = []
        reader.scannedMembers &+= Int(reader.nodes[object].count)
        let ascii = key.utf8.allSatisfy { $0 < 0x80 }
        var utf8 = key
        utf8.withUTF8 { name in
            reader.forEachMember(of: object) { keyNode, value in
                guard let repetition = reader.repetition(keyNode, of: key, name, nameIsASCII: ascii) else { return }
                switch repetition {
                case 0: plain = value
                case 1: first = value
                case ...maxRepetitions: numbered.append((repetition, numbered.count, value))
                default: break
                }
            }
        }
        let one = plain ?? first
        var places: [(repetition: Int, value: Int)] = [] // by repetition, each once: the last sent
        if !numbered.isEmpty {
            numbered.sort { ($0.repetition, $0.order) < ($1.repetition, $1.order) }
            places.reserveCapacity(numbered.count)
            for entry in numbered {
                if places.last?.repetition == entry.repetition { places[places.count - 1].value = entry.value } else { places.append((entry.repetition, entry.value)) }
            }
            while let last = places.last, reader.isEmptyString(last.value) { places.removeLast() }
        }
        let count = places.last?.repetition ?? (one.map { reader.isEmptyString($0) ? 0 : 1 } ?? 0)
        guard count > 0 else { return [] }
        let gaps = count - places.count - (one == nil ? 0 : 1)
        guard gaps <= reader.gapsLeft else {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription:
                "repetition \(count) leaves more repetitions unsent before it than the answer's size allows"))
        }
        reader.gapsLeft -= gaps
        var values = [Int](repeating: gap, count: count)
        if let one { values[0] = one }
        for place in places { values[place.repetition - 1] = place.value }
        return values
    }

    /// Whether `object` has a repetition of `key` other than the first (`key(2)`, …, up to ``maxRepetitions``).
    static func hasLaterRepetition(of key: String, in object: Int, _ reader: JSONTapeReader) -> Bool {
        reader.scannedMembers &+= Int(reader.nodes[object].count)
        let ascii = key.utf8.allSatisfy { $0 < 0x80 }
        var utf8 = key
        var found = false
        utf8.withUTF8 { name in
            reader.forEachMember(of: object) { keyNode, _ in
                if !found, let repetition = reader.repetition(keyNode, of: key, name, nameIsASCII: ascii), (2...maxRepetitions).contains(repetition) {
                    found = true
                }
            }
        }
        return found
    }
}

/// The types a repeating field decodes into when the layout sent none of its first repetition (only `name(2)`,
/// …): arrays, and optional arrays.
private protocol RepeatingFieldArray {}
extension Array: RepeatingFieldArray {}
extension Optional: RepeatingFieldArray where Wrapped: RepeatingFieldArray {}

// MARK: - The decoder

/// A `Decoder` over one node of a tape.
private final class TapeDecoder: Decoder {
    let reader: JSONTapeReader
    let node: Int
    let codingPath: [any CodingKey]
    let options: FileMakerDecoder
    /// The object and key this value came from, for reading a repeating field as an array.
    let origin: (object: Int, key: String)?
    /// Where the keys of each `CodingKey` type were found last (shared by every decoder of one answer).
    let shapes: Shapes
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ reader: JSONTapeReader, node: Int, codingPath: [any CodingKey], options: FileMakerDecoder,
         origin: (object: Int, key: String)? = nil, shapes: Shapes = Shapes()) {
        self.reader = reader
        self.node = node
        self.codingPath = codingPath
        self.options = options
        self.origin = origin
        self.shapes = shapes
    }

    func child(_ node: Int, codingPath: [any CodingKey], origin: (object: Int, key: String)? = nil) -> TapeDecoder {
        TapeDecoder(reader, node: node, codingPath: codingPath, options: options, origin: origin, shapes: shapes)
    }

    func checkOpen() throws {
        guard reader.isOpen else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "the decoder was used after decoding ended"))
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try checkOpen()
        guard reader.nodes[node].kind == .object else { throw Rules.mismatch([String: Any].self, reader, node, codingPath) }
        return KeyedDecodingContainer(TapeKeyedContainer<Key>(decoder: self, object: node, shape: shapes.shape(for: Key.self)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try checkOpen()
        if reader.nodes[node].kind == .array {
            return TapeUnkeyedContainer(decoder: self, elements: reader.members(of: node))
        }
        if let origin {
            return TapeUnkeyedContainer(decoder: self, elements: try Rules.repetitions(of: origin.key, in: origin.object, reader, codingPath))
        }
        throw Rules.mismatch([Any].self, reader, node, codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try checkOpen()
        return TapeSingleValueContainer(decoder: self)
    }

    /// Decodes `T` from ``node``, with the types that need FileMaker rules handled here.
    func unbox<T: Decodable>(_ type: T.Type) throws -> T {
        try checkOpen()
        if T.self == Date.self, let date = try Rules.date(reader, node, options, codingPath) as? T { return date }
        if T.self == Decimal.self, let decimal = try Rules.decimal(reader, node, codingPath) as? T { return decimal }
        if T.self == FMFieldValue.self, let field = reader.fieldValue(node) as? T { return field }
        if T.self == URL.self, let url = try Rules.url(reader, node, codingPath) as? T { return url }
        return try T(from: self)
    }
}

/// For each `CodingKey` type, the offset (from the object's node) of the key asked for at each position of
/// the sequence of lookups: the records of a found set share one shape, so each key is found in one
/// comparison instead of a search.
private final class Shapes {
    final class Shape {
        /// Not checked for overlapping accesses at run time, as `TapeKeyedState`'s position: only `find` uses it.
        @exclusivity(unchecked) var offsets: [Int] = []
    }

    private var shapes: [ObjectIdentifier: Shape] = [:]

    func shape(for type: Any.Type) -> Shape {
        let id = ObjectIdentifier(type)
        if let shape = shapes[id] { return shape }
        let shape = Shape()
        shapes[id] = shape
        return shape
    }
}

/// What one keyed container reads, behind one reference: the standard library's `KeyedDecodingContainer` box
/// copies the container for every `decode(_:forKey:)`, and copying one reference is one retain and one release
/// (four references made it four of each, a third of a typed decode's time).
private final class TapeKeyedState {
    let decoder: TapeDecoder
    let reader: JSONTapeReader
    /// The reader's nodes, held here so that a lookup reads them without a retain of its own.
    let nodes: [JSONTape.Node]
    let object: Int
    let shape: Shapes.Shape
    /// The position in this container's sequence of lookups. This, `last` and the shape's offsets are touched
    /// only inside `find`, which calls nothing that could reach them again, on the one thread of a decode: they
    /// are not checked for overlapping accesses at run time (a check for every field decoded).
    @exclusivity(unchecked) var position = 0
    /// The value node the last lookup found (0: none yet).
    @exclusivity(unchecked) var last = 0

    init(decoder: TapeDecoder, object: Int, shape: Shapes.Shape) {
        self.decoder = decoder
        reader = decoder.reader
        nodes = decoder.reader.nodes
        self.object = object
        self.shape = shape
    }

    /// The value node of `name`: first where the key at this position of the sequence was last time.
    func find(_ name: String) -> Int? {
        let position = self.position
        self.position += 1
        if nodes[object].duplicateKeys { return reader.value(forKey: name, in: object) } // the last, as JSONSerialization
        if position < shape.offsets.count {
            let candidate = object + shape.offsets[position]
            if candidate < nodes[object].end, nodes[candidate].kind == .key, nodes[candidate].depth == nodes[object].depth + 1,
               reader.keyEquals(candidate, name) {
                last = candidate + 1
                return candidate + 1
            }
        }
        // Keys read in the document's order (a dictionary's, a new shape's): the key after the last one found.
        let after = last == 0 ? object + 1 : reader.next(after: last)
        let value: Int
        if after < nodes[object].end, reader.keyEquals(after, name) {
            value = after + 1
        } else {
            guard let found = reader.value(forKey: name, in: object) else { return nil }
            value = found
        }
        last = value
        if position < shape.offsets.count {
            shape.offsets[position] = value - 1 - object
        } else if position == shape.offsets.count {
            shape.offsets.append(value - 1 - object)
        }
        return value
    }
}

private struct TapeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    private let state: TapeKeyedState

    init(decoder: TapeDecoder, object: Int, shape: Shapes.Shape) {
        state = TapeKeyedState(decoder: decoder, object: object, shape: shape)
    }

    private var decoder: TapeDecoder { state.decoder }
    private var object: Int { state.object }
    private var reader: JSONTapeReader { state.reader }
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        guard reader.isOpen else { return [] } // kept past decoding: the bytes are gone
        var keys: [Key] = []
        reader.forEachMember(of: object) { key, _ in
            if let codingKey = Key(stringValue: reader.string(key)) { keys.append(codingKey) }
        }
        return keys
    }

    /// `Key` → value node, with the repetition aliases (`name(1)` ⇄ `name`).
    private func lookup(_ key: Key) -> Int? {
        let name = key.stringValue
        if let value = state.find(name) { return value }
        if name.hasSuffix("(1)") { return reader.value(forKey: String(name.dropLast(3)), in: object) }
        if name.last != ")" { return reader.value(forKey: name + "(1)", in: object) }
        return nil
    }

    func contains(_ key: Key) -> Bool { reader.isOpen && lookup(key) != nil }

    private func value(_ key: Key) throws -> Int {
        try nonNull(present(key), key)
    }

    /// The value node of `key`, `null` included.
    private func present(_ key: Key) throws -> Int {
        try decoder.checkOpen()
        guard let value = lookup(key) else { throw missing(key) }
        return value
    }

    private func missing(_ key: Key) -> DecodingError {
        .keyNotFound(key, .init(codingPath: codingPath, debugDescription: "the layout sent no field \(key.stringValue)"))
    }

    /// For an array `T` (or an optional one) of a repeating field the layout sent without its first repetition
    /// (`name(2)`, … but no `name`): a decoder of its repetitions, each at its place; `nil` otherwise.
    private func laterRepetitions<T>(_ type: T.Type, _ key: Key) -> TapeDecoder? {
        guard T.self is any RepeatingFieldArray.Type, Rules.hasLaterRepetition(of: key.stringValue, in: object, reader) else { return nil }
        return TapeDecoder(reader, node: object, codingPath: codingPath + [key], options: decoder.options, origin: (object, key.stringValue),
                           shapes: decoder.shapes)
    }

    private func nonNull(_ value: Int, _ key: Key) throws -> Int {
        if reader.nodes[value].kind == .null {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath + [key], debugDescription: "null"))
        }
        return value
    }

    /// `nil` for a missing key or `null`; for `""`, the decoded value when the type can hold it, else `nil`.
    private func ifPresent<T>(_ key: Key, _ read: (Int) throws -> T) throws -> T? {
        try decoder.checkOpen()
        guard let value = lookup(key), reader.nodes[value].kind != .null else { return nil }
        if reader.isEmptyString(value) { return try? read(value) }
        return try read(value)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try decoder.checkOpen()
        guard let value = lookup(key) else { return true }
        return reader.nodes[value].kind == .null
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Rules.bool(reader, value(key), codingPath + [key]) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Rules.string(reader, value(key), codingPath + [key]) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Rules.double(reader, value(key), codingPath + [key]) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try Rules.float(reader, value(key), codingPath + [key]) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Rules.integer(Int.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Rules.integer(Int8.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Rules.integer(Int16.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Rules.integer(Int32.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Rules.integer(Int64.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Rules.integer(UInt.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Rules.integer(UInt8.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try Rules.integer(UInt16.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try Rules.integer(UInt32.self, reader, value(key), codingPath + [key]) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try Rules.integer(UInt64.self, reader, value(key), codingPath + [key]) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.checkOpen()
        guard let value = lookup(key) else {
            if let repetitions = laterRepetitions(T.self, key) { return try repetitions.unbox(T.self) }
            throw missing(key)
        }
        if reader.nodes[value].kind == .null || reader.isEmptyString(value), let optional = T.self as? any ExpressibleByNilLiteral.Type {
            // `decode(Int?.self, forKey:)` (a custom `init(from:)`, a generic property): null is nil as for
            // `JSONDecoder`, and so is "" when the wrapped type cannot hold it (as for an optional property).
            if reader.nodes[value].kind == .string, let decoded = try? child(value, key).unbox(T.self) { return decoded }
            if let none = optional.init(nilLiteral: ()) as? T { return none }
        }
        return try child(nonNull(value, key), key).unbox(T.self)
    }

    private func child(_ value: Int, _ key: Key) -> TapeDecoder {
        decoder.child(value, codingPath: codingPath + [key], origin: (object, key.stringValue))
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try ifPresent(key) { try Rules.bool(reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try ifPresent(key) { try Rules.string(reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try ifPresent(key) { try Rules.double(reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try ifPresent(key) { try Rules.float(reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try ifPresent(key) { try Rules.integer(Int.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try ifPresent(key) { try Rules.integer(Int8.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try ifPresent(key) { try Rules.integer(Int16.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try ifPresent(key) { try Rules.integer(Int32.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try ifPresent(key) { try Rules.integer(Int64.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try ifPresent(key) { try Rules.integer(UInt.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try ifPresent(key) { try Rules.integer(UInt8.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try ifPresent(key) { try Rules.integer(UInt16.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try ifPresent(key) { try Rules.integer(UInt32.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try ifPresent(key) { try Rules.integer(UInt64.self, reader, $0, codingPath + [key]) } }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        // `Date?` (every date, time and timestamp of a generated type): parsed in place, without a child
        // decoder and a coding path per field; anything else (and every failure) takes the general path.
        if T.self == Date.self {
            return try ifPresent(key) { node -> T in
                if reader.nodes[node].kind == .string,
                   let date = reader.withRawText(node, { FileMakerDate.parse(bytes: $0, timeZone: decoder.options.timeZone) }) {
                    return unsafeBitCast(date, to: T.self) // T is Date
                }
                return try child(node, key).unbox(T.self)
            }
        }
        try decoder.checkOpen()
        guard let value = lookup(key) else { return try laterRepetitions(T.self, key)?.unbox(T.self) }
        guard reader.nodes[value].kind != .null else { return nil }
        if reader.isEmptyString(value) { return try? child(value, key).unbox(T.self) }
        return try child(value, key).unbox(T.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(value(key), key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        // A repeating field may be absent as `name` but present as `name(1)`, … : the decoder finds them.
        try decoder.checkOpen()
        guard let value = lookup(key) else {
            return try TapeDecoder(reader, node: object, codingPath: codingPath + [key], options: decoder.options, origin: (object, key.stringValue),
                                   shapes: decoder.shapes).repetitionsContainer()
        }
        return try child(value, key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        decoder.child(object, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try decoder.checkOpen()
        guard let value = lookup(key) else { throw missing(key) }
        return child(value, key)
    }
}

extension TapeDecoder {
    /// The repetitions of ``origin`` as an unkeyed container (no value under the plain name).
    fileprivate func repetitionsContainer() throws -> any UnkeyedDecodingContainer {
        guard let origin else { throw Rules.mismatch([Any].self, reader, node, codingPath) }
        return TapeUnkeyedContainer(decoder: self, elements: try Rules.repetitions(of: origin.key, in: origin.object, reader, codingPath))
    }
}

private struct TapeUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: TapeDecoder
    let elements: [Int]
    var currentIndex = 0

    init(decoder: TapeDecoder, elements: [Int]) {
        self.decoder = decoder
        self.elements = elements
    }

    private var reader: JSONTapeReader { decoder.reader }
    var codingPath: [any CodingKey] { decoder.codingPath }
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

    /// The next element: its reader and node (a repetition the layout did not send, ``Rules/gap``, is read as
    /// an empty value: ``JSONTapeReader/emptyValue()``).
    private mutating func next() throws -> (reader: JSONTapeReader, node: Int) {
        try decoder.checkOpen()
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: path, debugDescription: "no more elements"))
        }
        defer { currentIndex += 1 }
        let node = elements[currentIndex]
        return node == Rules.gap ? (reader.emptyValue(), 0) : (reader, node)
    }

    /// A decoder of `element` at `path`.
    private func child(_ element: (reader: JSONTapeReader, node: Int), _ path: [any CodingKey]) -> TapeDecoder {
        element.reader === reader ? decoder.child(element.node, codingPath: path)
            : TapeDecoder(element.reader, node: element.node, codingPath: path, options: decoder.options, shapes: decoder.shapes)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] != Rules.gap else { return false }
        if reader.nodes[elements[currentIndex]].kind == .null {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { let p = path, e = try next(); return try Rules.bool(e.reader, e.node, p) }
    mutating func decode(_ type: String.Type) throws -> String { let p = path, e = try next(); return try Rules.string(e.reader, e.node, p) }
    mutating func decode(_ type: Double.Type) throws -> Double { let p = path, e = try next(); return try Rules.double(e.reader, e.node, p) }
    mutating func decode(_ type: Float.Type) throws -> Float { let p = path, e = try next(); return try Rules.float(e.reader, e.node, p) }
    mutating func decode(_ type: Int.Type) throws -> Int { let p = path, e = try next(); return try Rules.integer(Int.self, e.reader, e.node, p) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let p = path, e = try next(); return try Rules.integer(Int8.self, e.reader, e.node, p) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let p = path, e = try next(); return try Rules.integer(Int16.self, e.reader, e.node, p) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let p = path, e = try next(); return try Rules.integer(Int32.self, e.reader, e.node, p) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let p = path, e = try next(); return try Rules.integer(Int64.self, e.reader, e.node, p) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let p = path, e = try next(); return try Rules.integer(UInt.self, e.reader, e.node, p) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let p = path, e = try next(); return try Rules.integer(UInt8.self, e.reader, e.node, p) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let p = path, e = try next(); return try Rules.integer(UInt16.self, e.reader, e.node, p) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let p = path, e = try next(); return try Rules.integer(UInt32.self, e.reader, e.node, p) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let p = path, e = try next(); return try Rules.integer(UInt64.self, e.reader, e.node, p) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let p = path
        let element = try next()
        let child = child(element, p)
        // An empty repetition or element (or one the layout did not send) read into an optional that cannot hold "" is nil.
        if element.reader.isEmptyString(element.node), let optional = T.self as? any ExpressibleByNilLiteral.Type {
            if let decoded = try? child.unbox(T.self) { return decoded }
            if let none = optional.init(nilLiteral: ()) as? T { return none }
        }
        return try child.unbox(T.self)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let p = path
        return try child(next(), p).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let p = path
        return try child(next(), p).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let p = path
        return child(try next(), p)
    }
}

private struct TapeSingleValueContainer: SingleValueDecodingContainer {
    let decoder: TapeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var reader: JSONTapeReader { decoder.reader }
    private var node: Int { decoder.node }

    /// The node, once the decoder is known to be open (a container kept past decoding must not read the bytes).
    private func open() throws -> Int {
        try decoder.checkOpen()
        return node
    }

    func decodeNil() -> Bool { reader.nodes[node].kind == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Rules.bool(reader, open(), codingPath) }
    func decode(_ type: String.Type) throws -> String { try Rules.string(reader, open(), codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Rules.double(reader, open(), codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try Rules.float(reader, open(), codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try Rules.integer(Int.self, reader, open(), codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Rules.integer(Int8.self, reader, open(), codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Rules.integer(Int16.self, reader, open(), codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Rules.integer(Int32.self, reader, open(), codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Rules.integer(Int64.self, reader, open(), codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Rules.integer(UInt.self, reader, open(), codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Rules.integer(UInt8.self, reader, open(), codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Rules.integer(UInt16.self, reader, open(), codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Rules.integer(UInt32.self, reader, open(), codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Rules.integer(UInt64.self, reader, open(), codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(T.self) }
}

extension FMFieldValue {
    /// The value of a parsed JSON element (`JSONSerialization` types).
    init(any value: Any) {
        switch value {
        case let text as String: self = .string(text)
        case let decimal as NSDecimalNumber:
            // `doubleValue` is not correctly rounded: read the decimal's exact text instead.
            self = .number(Double(decimal.description) ?? decimal.doubleValue)
        case let number as NSNumber:
            self = RawJSON.isBoolean(number) ? .bool(number.boolValue) : .number(number.doubleValue)
        case let flag as Bool: self = .bool(flag)
        case let double as Double: self = .number(double)
        case let integer as Int: self = .number(Double(integer))
        case let array as [Any]: self = .array(array.map(FMFieldValue.init(any:)))
        case let object as [String: Any]: self = .object(object.mapValues(FMFieldValue.init(any:)))
        default: self = .null
        }
    }
}
