import Foundation

/// A field to create with ``FMOData/createTable(_:fields:completion:)`` or
/// ``FMOData/addFields(to:fields:completion:)``.
public struct FMODataFieldDefinition: Sendable, Equatable {
    /// The field name.
    public var name: String
    /// The SQL type FileMaker maps to a field type: `varchar(100)`, `int`, `numeric`, `decimal`, `date`,
    /// `time`, `timestamp`, `blob` (a container); `int[4]` for four repetitions.
    public var type: String
    /// The primary key (not empty, unique).
    public var primary: Bool
    /// Unique values.
    public var unique: Bool
    /// `false`: the field must not be empty.
    public var nullable: Bool
    /// A global field.
    public var global: Bool
    /// An auto-enter default: `USER`, `CURRENT_DATE`, `CURRENT_TIME`, `CURRENT_TIMESTAMP`, or a constant.
    public var defaultValue: String?
    /// A container's external secure storage folder (`ContactMgmt/`).
    public var externalSecurePath: String?

    /// Describes a field.
    public init(name: String, type: String, primary: Bool = false, unique: Bool = false, nullable: Bool = true, global: Bool = false,
                defaultValue: String? = nil, externalSecurePath: String? = nil) {
        self.name = name
        self.type = type
        self.primary = primary
        self.unique = unique
        self.nullable = nullable
        self.global = global
        self.defaultValue = defaultValue
        self.externalSecurePath = externalSecurePath
    }

    /// The field's JSON, as FileMaker's schema calls take it (only what differs from the defaults).
    var json: [String: Any] {
        var object: [String: Any] = ["name": name, "type": type]
        if primary { object["primary"] = true }
        if unique { object["unique"] = true }
        if !nullable { object["nullable"] = false }
        if global { object["global"] = true }
        if let defaultValue { object["default"] = defaultValue }
        if let externalSecurePath { object["externalSecurePath"] = externalSecurePath }
        return object
    }
}

extension FMOData {
    private static func schemaAnswer(_ response: Endpoint<[String: Any]>.Response) throws -> [String: Any] {
        response.body.isEmpty ? [:] : try ODataEnvelope.object(response.body, status: response.status)
    }

    private static func checked(_ names: [String]) -> FMError? {
        names.contains(where: \.isEmpty) ? .invalidArgument("An empty table or field name") : nil
    }

    func schemaCall(_ method: Endpoint<[String: Any]>.Method, _ segments: [String], kind: String,
                    _ payload: [String: Any]?) -> ODataCall<[String: Any]> {
        var call = jsonCall(method, segments.map(ODataText.encodePath).joined(separator: "/"), kind: kind, payload.map { .success($0) }) {
            try Self.schemaAnswer($0)
        }
        if call.invalid == nil { call.invalid = Self.checked(Array(segments.dropFirst())) }
        return call
    }

    /// Creates a table (`POST /{db}/FileMaker_Tables`). Needs an account allowed to change the schema.
    /// - Parameters:
    ///   - name: the table name.
    ///   - fields: its fields.
    ///   - completion: the server's answer (`tableName`, `fields`) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createTable(_ name: String, fields: [FMODataFieldDefinition], completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(createTableCall(name, fields: fields)) { completion($0.value, $0.code) }
    }

    /// Adds fields to a table (`PATCH /{db}/FileMaker_Tables/{table}`).
    /// - Parameters:
    ///   - table: the table name.
    ///   - fields: the new fields.
    ///   - completion: the server's answer or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func addFields(to table: String, fields: [FMODataFieldDefinition], completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(addFieldsCall(table, fields: fields)) { completion($0.value, $0.code) }
    }

    /// Deletes a table (`DELETE /{db}/FileMaker_Tables/{table}`).
    /// - Parameters:
    ///   - table: the table name.
    ///   - completion: the server's answer (empty when it sent none) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteTable(_ table: String, completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(deleteTableCall(table)) { completion($0.value, $0.code) }
    }

    /// Deletes a field (`DELETE /{db}/FileMaker_Tables/{table}/{field}`).
    /// - Parameters:
    ///   - field: the field name.
    ///   - table: the table name.
    ///   - completion: the server's answer or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteField(_ field: String, from table: String, completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(deleteFieldCall(field, table)) { completion($0.value, $0.code) }
    }

    /// Indexes a field (`POST /{db}/FileMaker_Indexes/{table}` with `{"indexName": field}`).
    /// - Parameters:
    ///   - field: the field name.
    ///   - table: the table name.
    ///   - completion: the server's answer or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createIndex(on field: String, in table: String, completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(createIndexCall(field, table)) { completion($0.value, $0.code) }
    }

    /// Removes a field's index (`DELETE /{db}/FileMaker_Indexes/{table}/{field}`).
    /// - Parameters:
    ///   - field: the field name.
    ///   - table: the table name.
    ///   - completion: the server's answer or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteIndex(on field: String, in table: String, completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(deleteIndexCall(field, table)) { completion($0.value, $0.code) }
    }
}

extension FMOData {
    func createTableCall(_ name: String, fields: [FMODataFieldDefinition]) -> ODataCall<[String: Any]> {
        var call = schemaCall(.post, ["FileMaker_Tables"], kind: "FileMaker_Tables", ["tableName": name, "fields": fields.map(\.json)])
        if call.invalid == nil, name.isEmpty || fields.contains(where: { $0.name.isEmpty || $0.type.isEmpty }) {
            call.invalid = .invalidArgument("An empty table name, field name or type")
        }
        return call
    }

    func addFieldsCall(_ table: String, fields: [FMODataFieldDefinition]) -> ODataCall<[String: Any]> {
        var call = schemaCall(.patch, ["FileMaker_Tables", table], kind: "FileMaker_Tables/{}", ["fields": fields.map(\.json)])
        if call.invalid == nil, fields.contains(where: { $0.name.isEmpty || $0.type.isEmpty }) {
            call.invalid = .invalidArgument("An empty field name or type")
        }
        return call
    }

    func deleteTableCall(_ table: String) -> ODataCall<[String: Any]> {
        schemaCall(.delete, ["FileMaker_Tables", table], kind: "FileMaker_Tables/{}", nil)
    }

    func deleteFieldCall(_ field: String, _ table: String) -> ODataCall<[String: Any]> {
        schemaCall(.delete, ["FileMaker_Tables", table, field], kind: "FileMaker_Tables/{}/{}", nil)
    }

    func createIndexCall(_ field: String, _ table: String) -> ODataCall<[String: Any]> {
        var call = schemaCall(.post, ["FileMaker_Indexes", table], kind: "FileMaker_Indexes/{}", ["indexName": field])
        if call.invalid == nil, field.isEmpty { call.invalid = .invalidArgument("An empty field name") }
        return call
    }

    func deleteIndexCall(_ field: String, _ table: String) -> ODataCall<[String: Any]> {
        schemaCall(.delete, ["FileMaker_Indexes", table, field], kind: "FileMaker_Indexes/{}/{}", nil)
    }

    private func sendJSON(_ call: ODataCall<[String: Any]>) async throws -> [String: Any] {
        try await sendAsync(call)
    }

    /// Creates a table; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func createTable(_ name: String, fields: [FMODataFieldDefinition]) async throws -> [String: Any] {
        try await sendJSON(createTableCall(name, fields: fields))
    }

    /// Adds fields to a table; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func addFields(to table: String, fields: [FMODataFieldDefinition]) async throws -> [String: Any] {
        try await sendJSON(addFieldsCall(table, fields: fields))
    }

    /// Deletes a table; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func deleteTable(_ table: String) async throws -> [String: Any] {
        try await sendJSON(deleteTableCall(table))
    }

    /// Deletes a field; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func deleteField(_ field: String, from table: String) async throws -> [String: Any] {
        try await sendJSON(deleteFieldCall(field, table))
    }

    /// Indexes a field; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func createIndex(on field: String, in table: String) async throws -> [String: Any] {
        try await sendJSON(createIndexCall(field, table))
    }

    /// Removes a field's index; returns the server's answer. Throws ``FMError``.
    @discardableResult
    public func deleteIndex(on field: String, in table: String) async throws -> [String: Any] {
        try await sendJSON(deleteIndexCall(field, table))
    }
}
