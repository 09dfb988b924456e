import Foundation

/// Information about a found set (`dataInfo`): the table, the counts, and how many records came back.
public struct FMDataInfo: Sendable, Hashable, Codable {
    /// The database name.
    public var database: String
    /// The layout name.
    public var layout: String
    /// The layout's table occurrence.
    public var table: String
    /// The number of records in the table.
    public var totalRecordCount: Int
    /// The number of records in the found set (the whole table for a range request).
    public var foundCount: Int
    /// The number of records in this answer.
    public var returnedCount: Int

    /// Creates a data info value.
    public init(database: String, layout: String, table: String, totalRecordCount: Int, foundCount: Int, returnedCount: Int) {
        self.database = database
        self.layout = layout
        self.table = table
        self.totalRecordCount = totalRecordCount
        self.foundCount = foundCount
        self.returnedCount = returnedCount
    }

    enum CodingKeys: String, CodingKey {
        case database, layout, table, totalRecordCount, foundCount, returnedCount
    }

    /// Decodes `dataInfo`; counts may be numbers or digit strings, missing names are `""`. A negative count is
    /// an error (no set holds fewer than no records).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        database = try container.lenientString(.database) ?? ""
        layout = try container.lenientString(.layout) ?? ""
        table = try container.lenientString(.table) ?? ""
        totalRecordCount = try container.lenientInt(.totalRecordCount) ?? 0
        foundCount = try container.lenientInt(.foundCount) ?? 0
        returnedCount = try container.lenientInt(.returnedCount) ?? 0
        if let (key, problem) = negativeCount {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: problem)
        }
    }

    /// A found-set answer's `dataInfo`, each count read once (``RawJSON/count(_:_:in:status:)``).
    init(raw: [String: Any], status: Int) throws(FMError) {
        database = RawJSON.string(raw["database"]) ?? ""
        layout = RawJSON.string(raw["layout"]) ?? ""
        table = RawJSON.string(raw["table"]) ?? ""
        totalRecordCount = try RawJSON.count(raw, "totalRecordCount", in: "dataInfo", status: status)
        foundCount = try RawJSON.count(raw, "foundCount", in: "dataInfo", status: status)
        returnedCount = try RawJSON.count(raw, "returnedCount", in: "dataInfo", status: status)
    }

    /// The `dataInfo` of a found-set answer: ``init(raw:status:)``, or `-1007` when a count is negative or not an integer.
    static func checked(raw: [String: Any]?, status: Int) throws(FMError) -> FMDataInfo? {
        guard let raw else { return nil }
        let info = try FMDataInfo(raw: raw, status: status)
        if let (_, problem) = info.negativeCount { throw FMError.malformed(problem, status: status) }
        return info
    }

    /// The first negative count and what to say about it, or `nil`.
    private var negativeCount: (CodingKeys, String)? {
        let counts: [(CodingKeys, Int)] = [(.totalRecordCount, totalRecordCount), (.foundCount, foundCount), (.returnedCount, returnedCount)]
        guard let (key, value) = counts.first(where: { $0.1 < 0 }) else { return nil }
        return (key, "dataInfo.\(key.rawValue) is negative (\(value))")
    }
}

/// Information about one returned portal (`portalDataInfo`).
public struct FMPortalDataInfo: Sendable, Hashable, Codable {
    /// The portal's object name, when it has one.
    public var portalObjectName: String?
    /// The database of the related table.
    public var database: String
    /// The related table occurrence.
    public var table: String
    /// The number of related records.
    public var foundCount: Int
    /// The number of rows returned.
    public var returnedCount: Int

    /// Creates a portal data info value.
    public init(portalObjectName: String?, database: String, table: String, foundCount: Int, returnedCount: Int) {
        self.portalObjectName = portalObjectName
        self.database = database
        self.table = table
        self.foundCount = foundCount
        self.returnedCount = returnedCount
    }

    /// The key of this portal in `portalData`: the object name, or the table occurrence name.
    public var portalName: String { portalObjectName ?? table }

    enum CodingKeys: String, CodingKey {
        case portalObjectName, database, table, foundCount, returnedCount
    }

    /// One entry of a record's `portalDataInfo`, each count read once (``RawJSON/count(_:_:in:status:)``).
    init(raw: [String: Any], status: Int) throws(FMError) {
        portalObjectName = RawJSON.string(raw["portalObjectName"])
        database = RawJSON.string(raw["database"]) ?? ""
        table = RawJSON.string(raw["table"]) ?? ""
        foundCount = try RawJSON.count(raw, "foundCount", in: "portalDataInfo", status: status)
        returnedCount = try RawJSON.count(raw, "returnedCount", in: "portalDataInfo", status: status)
    }

    /// Decodes `portalDataInfo[i]`; a negative count is an error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        portalObjectName = try container.lenientString(.portalObjectName)
        database = try container.lenientString(.database) ?? ""
        table = try container.lenientString(.table) ?? ""
        foundCount = try container.lenientInt(.foundCount) ?? 0
        returnedCount = try container.lenientInt(.returnedCount) ?? 0
        if let (key, problem) = negativeCount {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: problem)
        }
    }

    /// The entries of a record's `portalDataInfo`: ``init(raw:status:)`` each (entries that are not objects left
    /// out), or `-1007` when a count is negative or not an integer.
    static func checked(raw: [Any]?, status: Int) throws(FMError) -> [FMPortalDataInfo]? {
        guard let raw else { return nil }
        var infos: [FMPortalDataInfo] = []
        for case let entry as [String: Any] in raw { infos.append(try FMPortalDataInfo(raw: entry, status: status)) }
        if let (_, problem) = infos.lazy.compactMap(\.negativeCount).first { throw FMError.malformed(problem, status: status) }
        return infos
    }

    /// The first negative count and what to say about it, or `nil`.
    private var negativeCount: (CodingKeys, String)? {
        if foundCount < 0 { return (.foundCount, "portalDataInfo.foundCount is negative (\(foundCount))") }
        if returnedCount < 0 { return (.returnedCount, "portalDataInfo.returnedCount is negative (\(returnedCount))") }
        return nil
    }
}

/// One related record of a portal: its ids and its fields (keyed `TO::field`).
public struct FMPortalRow: Sendable, Hashable, Decodable {
    /// The related record's id.
    public var recordId: String
    /// The related record's modification id (absent on FileMaker Server 17).
    public var modId: String?
    /// The related fields, keyed as FileMaker sends them (`TO::field`).
    public var fields: [String: FMFieldValue]
    /// The characters of the row's long numbers (more than 15 of them) as the answer wrote them, for a row read
    /// from an answer: ``decode(_:timeZone:)`` reads those, every digit, where ``fields`` still holds that number
    /// (a `Double` holds some 16 digits: an id beyond 2^53 would read as its neighbour's). Not part of the row's value.
    var numberTexts: [String: String] = [:]

    /// Creates a portal row.
    public init(recordId: String, modId: String?, fields: [String: FMFieldValue]) {
        self.recordId = recordId
        self.modId = modId
        self.fields = fields
    }

    /// A row read from an answer, with the characters of its long numbers.
    init(recordId: String, modId: String?, fields: [String: FMFieldValue], numberTexts: [String: String]) {
        self.init(recordId: recordId, modId: modId, fields: fields)
        self.numberTexts = numberTexts
    }

    /// Rows are equal when their ids and fields are.
    public static func == (lhs: FMPortalRow, rhs: FMPortalRow) -> Bool {
        lhs.recordId == rhs.recordId && lhs.modId == rhs.modId && lhs.fields == rhs.fields
    }

    /// Hashes the ids and fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(recordId)
        hasher.combine(modId)
        hasher.combine(fields)
    }

    /// The related record id as an integer; `nil` when ``recordId`` is not a record id (a positive integer in digits),
    /// as the calls that take the id as text refuse it.
    public var recordID: Int? { try? DataAPI.recordNumber(recordId).get() }

    /// The value of a related field.
    public subscript(field: String) -> FMFieldValue? { fields[field] }

    /// Decodes the row's fields (keyed `TO::field`, plus `recordId` and `modId`) into `T`, with the FileMaker
    /// rules of typed records: `""` is `nil` for an optional that cannot hold it, numbers may arrive as text,
    /// dates, times and timestamps decode into `Date` (read in `timeZone`, UTC by default), repetitions
    /// `TO::field(n)` into arrays.
    ///
    /// - Throws: ``FMError`` with code `-1007` naming the field when the row does not have the shape of `T`.
    public func decode<T: Decodable>(_ type: T.Type, timeZone: TimeZone? = nil) throws -> T {
        var object: [String: Any] = [:]
        var exact: [(key: String, text: String)] = []
        for (key, value) in fields {
            // A long number read from an answer goes to the decoder as it was written, not through `Double`.
            if case .number(let number) = value, let text = numberTexts[key], Double(text) == number {
                exact.append((key, text))
            } else {
                object[key] = value.anyValue
            }
        }
        object["recordId"] = recordId
        if let modId { object["modId"] = modId }
        do {
            return try FileMakerDecoder(timeZone: timeZone).decode(T.self, from: object, numbers: exact)
        } catch {
            throw FMError(code: FMError.ClientCode.malformedResponse,
                          message: "Unexpected response: portal row \(FMError.serverText(recordId, limit: 100)) cannot be read as \(T.self): \(FileMakerDecoder.describe(error))",
                          underlying: FMError.underlyingText(error))
        }
    }

    /// Decodes a portal row: `recordId`, `modId` and every other key as a field.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        guard let id = try container.lenientString(AnyCodingKey("recordId")) else {
            throw DecodingError.keyNotFound(AnyCodingKey("recordId"), .init(codingPath: container.codingPath, debugDescription: "portal row without recordId"))
        }
        recordId = id
        modId = try container.lenientString(AnyCodingKey("modId"))
        var fields: [String: FMFieldValue] = [:]
        for key in container.allKeys where key.stringValue != "recordId" && key.stringValue != "modId" {
            fields[key.stringValue] = try container.decode(FMFieldValue.self, forKey: key)
        }
        self.fields = fields
    }
}

/// One record decoded into the caller's `Decodable` field type.
///
/// The typed calls (`getRecord(as:)`, `getRecords(as:)`, `find(as:)`, `pages(as:)`, ``FMFoundSet/decode(_:timeZone:)``)
/// read `fieldData` with FileMaker's rules, so plain Swift types work on real data:
/// - `""` (FileMaker's empty number, date, time, timestamp or container) is `nil` for an optional
///   property that cannot hold `""`; a non-optional one fails with `-1007` naming the record and field.
/// - Numbers sent as text decode into numeric properties.
/// - Dates, times and timestamps decode into `Date` from every `dateformats` (US `MM/dd/yyyy`, the
///   default and format 0; format 1 is read as US; ISO `yyyy-MM-dd`, format 2), with `HH:mm:ss` after a
///   space or `T`; a time alone is that time on 1970-01-01. They are read in the call's `timeZone`
///   (``FMReadOptions/timeZone``, ``FMFindRequest/timeZone``), **UTC** when none is set.
/// - A repeating field (`name`, `name(2)`, …) decodes into an array property named `name`, each repetition at
///   its place (trailing empty repetitions left out); a coding key `name(2)` reads one repetition. A repetition
///   the layout did not send, before one it did (a layout showing repetitions 1 and 3, or from 2 on), is an empty
///   value at its place: `""` in a `[String]`, `nil` in an array of optionals (the raw record has no key for it).
///
/// ```swift
/// struct Contact: Decodable { var name: String; var id: Int }
/// let records = try foundSet.decode(Contact.self)   // [FMRecord<Contact>]
/// ```
public struct FMRecord<Fields: Decodable>: Decodable {
    /// The record id (a string of digits on the wire).
    public var recordId: String
    /// The modification id; send it back with an edit to detect concurrent changes (306).
    public var modId: String
    /// The fields of the layout, decoded.
    public var fieldData: Fields
    /// The portals, keyed by portal object name (or table occurrence name); `[:]` when none.
    public var portalData: [String: [FMPortalRow]]
    /// Information about each returned portal (FileMaker Server 18+).
    public var portalDataInfo: [FMPortalDataInfo]?

    /// Creates a record.
    public init(recordId: String, modId: String, fieldData: Fields,
                portalData: [String: [FMPortalRow]] = [:], portalDataInfo: [FMPortalDataInfo]? = nil) {
        self.recordId = recordId
        self.modId = modId
        self.fieldData = fieldData
        self.portalData = portalData
        self.portalDataInfo = portalDataInfo
    }

    /// The record id as an integer; `nil` when ``recordId`` is not a record id (a positive integer in digits),
    /// as the calls that take the id as text refuse it.
    public var recordID: Int? { try? DataAPI.recordNumber(recordId).get() }

    enum CodingKeys: String, CodingKey {
        case recordId, modId, fieldData, portalData, portalDataInfo
    }

    /// Decodes a record of `response.data`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let id = try container.lenientString(.recordId) else {
            throw DecodingError.keyNotFound(CodingKeys.recordId, .init(codingPath: container.codingPath, debugDescription: "record without recordId"))
        }
        recordId = id
        modId = try container.lenientString(.modId) ?? ""
        fieldData = try container.decode(Fields.self, forKey: .fieldData)
        portalData = try container.decodeIfPresent([String: [FMPortalRow]].self, forKey: .portalData) ?? [:]
        portalDataInfo = try container.decodeIfPresent([FMPortalDataInfo].self, forKey: .portalDataInfo)
    }
}

extension FMRecord: Sendable where Fields: Sendable {}
extension FMRecord: Equatable where Fields: Equatable {}
extension FMRecord: Hashable where Fields: Hashable {}

/// A found set in the shape old callers use: raw `[[String: Any]]` records, plus `dataInfo`, script
/// results and the response bytes.
///
/// The raw records come from one parse of the answer; ``decode(_:timeZone:)`` decodes typed records from
/// the answer's bytes (read again by the typed decoder, which is faster than walking the parsed records).
///
/// `@unchecked Sendable`: the raw records are `JSONSerialization` output (immutable Foundation values
/// behind `Any`) stored in `let`s and never mutated after creation.
public struct FMFoundSet: @unchecked Sendable {
    /// The records with the value types `JSONSerialization` gives (`String`, `NSNumber`, `NSNull`, arrays,
    /// dictionaries; read by SwiftFM's own JSON reader): each has `fieldData`, `portalData`,
    /// `recordId` (String), `modId` (String) and, on FileMaker Server 18+, `portalDataInfo`.
    public let records: [[String: Any]]
    /// Information about the found set; `nil` on FileMaker Server 17 and for an empty result (401).
    public let dataInfo: FMDataInfo?
    /// The results of the scripts that ran with the request.
    public let scripts: FMScriptResults
    /// The body of the answer (empty for the synthesised empty found set of a 401).
    public let rawResponse: Data
    /// Whether ``records`` were read from ``rawResponse`` (typed decoding then reads the bytes again,
    /// faster than walking the parsed values); `false` for a found set made in code.
    private var parsedFromResponse = false

    /// Creates a found set.
    public init(records: [[String: Any]], dataInfo: FMDataInfo?, scripts: FMScriptResults = .none, rawResponse: Data = Data()) {
        self.records = records
        self.dataInfo = dataInfo
        self.scripts = scripts
        self.rawResponse = rawResponse
    }

    /// The empty found set reported with code `"401"` ("No records match the request").
    public static let empty = FMFoundSet(records: [], dataInfo: nil)

    /// The number of records returned.
    public var count: Int { records.count }
    /// The number of records the request matched on all pages (``FMDataInfo/foundCount``): `0` for the empty found
    /// set of a 401, `nil` when the answer carried no `dataInfo` (FileMaker Server 17, or a found set made in code).
    public var foundCount: Int? { dataInfo?.foundCount ?? (records.isEmpty ? 0 : nil) }
    /// `true` when no record was returned.
    public var isEmpty: Bool { records.isEmpty }
    /// The first record, if any (what the legacy single-record calls return).
    public var first: [String: Any]? { records.first }

    /// Decodes every record's `fieldData` into `T` (from ``rawResponse`` when the found set was read from an
    /// answer, else from ``records``), with the
    /// FileMaker rules of typed records (see ``FMRecord``).
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - timeZone: the zone dates, times and timestamps are read in; UTC when `nil`.
    /// - Throws: ``FMError`` with code `-1007` naming the record and the field when a record does not have
    ///   the shape of `T`.
    public func decode<T: Decodable>(_ type: T.Type, timeZone: TimeZone? = nil) throws -> [FMRecord<T>] {
        let decoder = FileMakerDecoder(timeZone: timeZone)
        if parsedFromResponse { return try decoder.foundSet(T.self, body: rawResponse, status: 200).records }
        return try decoder.records(T.self, records, status: 200)
    }

    /// Decodes the whole found set into `T` (records, `dataInfo`, scripts) from the parsed ``records``.
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - timeZone: the zone dates, times and timestamps are read in; UTC when `nil`.
    /// - Throws: ``FMError`` with code `-1007` naming the record and the field when a record does not have
    ///   the shape of `T`.
    public func typed<T: Decodable>(_ type: T.Type, timeZone: TimeZone? = nil) throws -> FMTypedFoundSet<T> {
        FMTypedFoundSet(records: try decode(type, timeZone: timeZone), dataInfo: dataInfo, scripts: scripts)
    }

    /// Parses a found-set answer (`response.data`, `response.dataInfo`, script keys) in one pass;
    /// `checkMessages`: see ``Envelope/response(from:status:checkMessages:parts:)``; `parts`: the most threads
    /// a large `data` array is read on (``FMConfiguration/parallelDecoding``).
    init(parsing body: Data, status: Int, checkMessages: Bool = false, parts: Int = 1) throws(FMError) {
        let response = try Envelope.response(from: body, status: status, checkMessages: checkMessages, parts: parts)
        guard let data = response["data"] as? [Any] else {
            throw FMError.malformed("no \"data\" array in the found set", status: status)
        }
        var records: [[String: Any]] = []
        records.reserveCapacity(data.count)
        for element in data {
            guard let record = element as? [String: Any] else {
                throw FMError.malformed("a record of \"data\" is not an object", status: status)
            }
            records.append(record)
        }
        self.records = records
        self.dataInfo = try FMDataInfo.checked(raw: response["dataInfo"] as? [String: Any], status: status)
        self.scripts = try FMScriptResults(raw: response, status: status)
        self.rawResponse = body
        self.parsedFromResponse = true
    }
}

extension FMFoundSet {
    /// Reads the bytes of a found-set answer (the body of a get-range, get-record or find answer, for
    /// example one saved to disk or received by your own transport).
    ///
    /// - Throws: ``FMError``: FileMaker's code when `messages[0].code` is not `"0"`, `-1006` when the body
    ///   is not JSON, `-1007` when it is not a found set.
    public init(responseBody: Data) throws {
        try self.init(parsing: responseBody, status: 200, checkMessages: true)
    }
}

extension FMTypedFoundSet {
    /// Reads the bytes of a found-set answer into typed records, with the FileMaker rules of ``FMRecord``.
    ///
    /// - Parameters:
    ///   - responseBody: the body of a get-range, get-record or find answer.
    ///   - timeZone: the zone dates, times and timestamps are read in; UTC when `nil`.
    /// - Throws: ``FMError``: FileMaker's code when `messages[0].code` is not `"0"`, `-1006` when the body
    ///   is not JSON, `-1007` naming the record and field when a record does not have the shape of `T`.
    public init(responseBody: Data, timeZone: TimeZone? = nil) throws {
        self = try FileMakerDecoder(timeZone: timeZone).foundSet(T.self, body: responseBody, status: 200, checkMessages: true)
    }
}

/// A found set decoded straight from the response bytes into `FMRecord<T>` values.
public struct FMTypedFoundSet<T: Decodable>: Decodable {
    /// The records.
    public var records: [FMRecord<T>]
    /// Information about the found set; `nil` on FileMaker Server 17 and for an empty result (401).
    public var dataInfo: FMDataInfo?
    /// The results of the scripts that ran with the request.
    public var scripts: FMScriptResults
    /// The content of each record whose `recordId` is empty, by its index in ``records`` (``RecordKey/content(_:)``):
    /// how a page walk tells such records apart, as it does raw ones. Filled when the set is read from an answer.
    var contentKeys: [Int: String] = [:]

    /// Creates a typed found set.
    public init(records: [FMRecord<T>], dataInfo: FMDataInfo?, scripts: FMScriptResults = .none) {
        self.records = records
        self.dataInfo = dataInfo
        self.scripts = scripts
    }

    /// An empty found set (the value reported with code `"401"`).
    public static var empty: FMTypedFoundSet<T> { FMTypedFoundSet(records: [], dataInfo: nil) }

    enum CodingKeys: String, CodingKey {
        case data, dataInfo
    }

    /// Decodes a `response` object: `data`, `dataInfo` and the script keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        records = try container.decode([FMRecord<T>].self, forKey: .data)
        dataInfo = try container.decodeIfPresent(FMDataInfo.self, forKey: .dataInfo)
        scripts = try FMScriptResults(from: decoder)
    }
}

extension FMTypedFoundSet {
    /// The first record, `nil` when the found set is empty: the one record of a `getRecord` answer.
    public var first: FMRecord<T>? { records.first }
}

extension FMTypedFoundSet: Sendable where T: Sendable {}
extension FMTypedFoundSet: Equatable where T: Equatable {
    /// Whether the records, the found set information and the script results are equal.
    public static func == (lhs: FMTypedFoundSet<T>, rhs: FMTypedFoundSet<T>) -> Bool {
        lhs.records == rhs.records && lhs.dataInfo == rhs.dataInfo && lhs.scripts == rhs.scripts
    }
}

/// The answer of a create or duplicate: the new record's ids and script results.
public struct FMRecordReference: Sendable, Hashable, Decodable {
    /// The new record's id (a string of digits).
    public var recordId: String
    /// The new record's modification id (`"0"`).
    public var modId: String
    /// The results of the scripts that ran with the request.
    public var scripts: FMScriptResults

    /// Creates a record reference.
    public init(recordId: String, modId: String, scripts: FMScriptResults = .none) {
        self.recordId = recordId
        self.modId = modId
        self.scripts = scripts
    }

    /// The record id as an integer (what legacy `Int` APIs take); `nil` when ``recordId`` is not a record id (a
    /// positive integer in digits), as the calls that take the id as text refuse it.
    public var recordID: Int? { try? DataAPI.recordNumber(recordId).get() }

    /// Decodes `{"recordId": …, "modId": …}` plus script keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        guard let id = try container.lenientString(AnyCodingKey("recordId")) else {
            throw DecodingError.keyNotFound(AnyCodingKey("recordId"), .init(codingPath: [], debugDescription: "no recordId in the answer"))
        }
        recordId = id
        modId = try container.lenientString(AnyCodingKey("modId")) ?? "0"
        scripts = try FMScriptResults(from: decoder)
    }
}

/// A related record created by an edit (`newPortalRecordInfo`).
public struct FMNewPortalRecord: Sendable, Hashable, Codable {
    /// The related table occurrence.
    public var tableName: String
    /// The new related record's id.
    public var recordId: String
    /// The new related record's modification id.
    public var modId: String

    /// Creates a new-portal-record value.
    public init(tableName: String, recordId: String, modId: String) {
        self.tableName = tableName
        self.recordId = recordId
        self.modId = modId
    }

    enum CodingKeys: String, CodingKey { case tableName, recordId, modId }

    /// Decodes an entry of `newPortalRecordInfo`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tableName = try container.lenientString(.tableName) ?? ""
        recordId = try container.lenientString(.recordId) ?? ""
        modId = try container.lenientString(.modId) ?? "0"
    }
}

/// The answer of an edit or a container upload.
public struct FMEditResult: Sendable, Hashable, Decodable {
    /// The record's new modification id; `""` when the server sent none (container uploads on FileMaker Server 19).
    public var modId: String
    /// The related records created through `portalData` (FileMaker Server 18+; one entry per portal).
    public var newPortalRecordInfo: [FMNewPortalRecord]
    /// The results of the scripts that ran with the request.
    public var scripts: FMScriptResults

    /// Creates an edit result.
    public init(modId: String, newPortalRecordInfo: [FMNewPortalRecord] = [], scripts: FMScriptResults = .none) {
        self.modId = modId
        self.newPortalRecordInfo = newPortalRecordInfo
        self.scripts = scripts
    }

    /// Decodes `{"modId": …, "newPortalRecordInfo": […]}` plus script keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AnyCodingKey.self)
        modId = try container.lenientString(AnyCodingKey("modId")) ?? ""
        newPortalRecordInfo = try container.decodeIfPresent([FMNewPortalRecord].self, forKey: AnyCodingKey("newPortalRecordInfo")) ?? []
        scripts = try FMScriptResults(from: decoder)
    }
}
