import Foundation

/// Reads `$metadata` as JSON CSDL (`Accept: application/json`) into ``FMODataMetadata``.
///
/// No XML parser: on Linux Foundation's lives in FoundationXML, which would make every binary linking SwiftFM
/// need libxml2. The JSON is indexed with the package's own ``JSONTape`` so members keep the document's
/// order (entity types, fields and sets are listed as the server wrote them).
///
/// Shape (OData CSDL JSON 4.01; FileMaker's as far as known from a trimmed sample):
/// `{"$Version":"4.01","@ServerVersion":"…","<namespace>":{"<Type>_":{"$Kind":"EntityType","$Key":[…],
/// "@TableID":"FMTID:…","<field>":{"$Type":"Edm.String","@FieldID":"FMFID:…"},"<nav>":{"$Kind":
/// "NavigationProperty","$Type":"…","$Collection":true}},"<Set>":{"$Kind":"EntitySet","$Type":"…"},
/// "<Container>":{"$Kind":"EntityContainer","<Set>":{"$Collection":true,"$Type":"…",
/// "$NavigationPropertyBinding":{"<nav>":"<Set>"}}}}}`.
///
/// Annotation terms are stored as the XML form names them: FileMaker's unqualified terms (`@FieldID`) get
/// the `com.filemaker.odata.` prefix, the aliases `Core.`/`Capabilities.` become `Org.OData.Core.V1.`/
/// `Org.OData.Capabilities.V1.`; values are text (`true`/`false`, numbers as written, enum members as sent).
/// Per CSDL JSON an absent `$Nullable` means `false` and an absent `$Type` means `Edm.String`.
enum ODataMetadataReader {
    /// An ordered JSON value: objects keep their members in document order.
    indirect enum Value {
        case object([(key: String, value: Value)])
        case array([Value])
        case string(String)
        case bool(Bool)
        case number(String)
        case null

        var members: [(key: String, value: Value)]? {
            if case .object(let members) = self { return members }
            return nil
        }

        /// The last member named `key` (a repeated key: the last wins, as `JSONSerialization`).
        subscript(key: String) -> Value? { members?.last { $0.key == key }?.value }

        var string: String? {
            if case .string(let text) = self { return text }
            return nil
        }

        var bool: Bool? {
            if case .bool(let flag) = self { return flag }
            return nil
        }

        /// A scalar as text (an annotation's or a default's value); arrays of scalars joined by spaces.
        var text: String? {
            switch self {
            case .string(let text): return text
            case .bool(let flag): return flag ? "true" : "false"
            case .number(let text): return text
            case .array(let values):
                let parts = values.compactMap(\.text)
                return parts.count == values.count ? parts.joined(separator: " ") : nil
            case .object, .null: return nil
            }
        }
    }

    static let fileMakerPrefix = "com.filemaker.odata."

    /// `$metadata` as JSON CSDL; `-1006` for a body that is not JSON (an XML or HTML answer), `-1007` for JSON
    /// that is not CSDL or has a member of the wrong type.
    static func metadata(_ body: Data, status: Int) throws(FMError) -> FMODataMetadata {
        let root = try parse(body, status: status)
        guard let members = root.members else { throw .malformed("the $metadata document is not a JSON object", status: status) }
        // A detail names the server's types and sets: printable and short, as its other words.
        func malformed(_ detail: String) -> FMError { .malformed("$metadata: " + FMError.serverText(detail, limit: 400), status: status) }

        var metadata = FMODataMetadata(namespace: "")
        var sawSchema = root["$Version"]?.string != nil
        for (key, value) in members where key.hasPrefix("@") {
            topLevel(term: String(key.dropFirst()), value: value, into: &metadata)
        }
        for (namespace, schema) in members where !namespace.hasPrefix("$") && !namespace.hasPrefix("@") {
            guard let elements = schema.members else { continue }   // `$Reference`-like or unknown: not a schema
            var isSchema = false
            for (name, element) in elements {
                if name.hasPrefix("@") {
                    topLevel(term: String(name.dropFirst()), value: element, into: &metadata)
                    continue
                }
                if name.hasPrefix("$") { continue }
                if case .array(let overloads) = element {
                    // Actions and functions: an array of overloads, each with `$Kind`.
                    let kinds = overloads.compactMap { $0["$Kind"]?.string }
                    if kinds.contains("Action") || kinds.contains("Function") {
                        isSchema = true
                        metadata.scripts.append(name)
                    }
                    continue
                }
                guard element.members != nil else { continue }
                guard let kindValue = element["$Kind"] else { continue }
                guard let kind = kindValue.string else { throw malformed("$Kind of \"\(name)\" is not a string") }
                switch kind {
                case "EntityType":
                    isSchema = true
                    metadata.entityTypes.append(try entityType(name, element, malformed))
                case "EntitySet":
                    isSchema = true
                    metadata.entitySets.append(try entitySet(name, element, malformed))
                case "EntityContainer":
                    isSchema = true
                    for (setName, set) in element.members ?? [] where !setName.hasPrefix("$") && !setName.hasPrefix("@") {
                        guard set.members != nil else { continue }
                        // Entity sets: `$Collection: true` (or an explicit `$Kind`); singletons and imports are skipped.
                        let setKind = set["$Kind"]?.string
                        guard setKind == "EntitySet" || (setKind == nil && set["$Collection"]?.bool == true) else { continue }
                        metadata.entitySets.append(try entitySet(setName, set, malformed))
                    }
                default:
                    isSchema = isSchema || ["ComplexType", "EnumType", "TypeDefinition", "Term"].contains(kind)
                }
            }
            if isSchema {
                sawSchema = true
                if metadata.namespace.isEmpty { metadata.namespace = namespace }
            }
        }
        guard sawSchema else { throw malformed("the document is not CSDL JSON (no $Version and no schema)") }
        return metadata
    }

    /// A term as the XML form writes it.
    static func term(_ raw: String) -> String {
        if raw.hasPrefix("Core.") { return "Org.OData.Core.V1." + raw.dropFirst("Core.".count) }
        if raw.hasPrefix("Capabilities.") { return "Org.OData.Capabilities.V1." + raw.dropFirst("Capabilities.".count) }
        let name = raw.split(separator: "#", maxSplits: 1).first.map(String.init) ?? raw
        return name.contains(".") ? raw : fileMakerPrefix + raw
    }

    /// The annotations of an element (its `@…` members) as text.
    private static func annotations(_ value: Value) -> [String: String] {
        var result: [String: String] = [:]
        for (key, member) in value.members ?? [] where key.hasPrefix("@") {
            if let text = member.text { result[term(String(key.dropFirst()))] = text }
        }
        return result
    }

    private static func topLevel(term raw: String, value: Value, into metadata: inout FMODataMetadata) {
        guard let text = value.text else { return }
        let name = term(raw)
        switch name {
        case fileMakerPrefix + "ServerVersion":
            metadata.serverVersion = text
        case "Org.OData.Core.V1.ProductVersion", fileMakerPrefix + "ProductVersion":
            if metadata.serverVersion == nil { metadata.serverVersion = text }
        case "Org.OData.Core.V1.SchemaVersion":
            metadata.schemaVersion = text
        default:
            break
        }
    }

    private static func typeName(_ value: Value?, of owner: String, _ malformed: (String) -> FMError) throws(FMError) -> String? {
        guard let value else { return nil }
        guard let text = value.string else { throw malformed("$Type of \"\(owner)\" is not a string") }
        return text
    }

    private static func entityType(_ name: String, _ element: Value, _ malformed: (String) -> FMError) throws(FMError) -> FMODataEntityType {
        var type = FMODataEntityType(name: name, annotations: annotations(element))
        if let key = element["$Key"] {
            guard case .array(let parts) = key else { throw malformed("$Key of \"\(name)\" is not an array") }
            for part in parts {
                // A key part is a property name, or `{"alias": "path"}`.
                if let text = part.string {
                    type.key.append(text)
                } else if let alias = part.members, alias.count == 1, let path = alias[0].value.string {
                    type.key.append(path)
                } else {
                    throw malformed("a $Key part of \"\(name)\" is not a property name")
                }
            }
        }
        for (member, value) in element.members ?? [] where !member.hasPrefix("$") && !member.hasPrefix("@") {
            guard value.members != nil else { continue }
            let kind = value["$Kind"]?.string
            let edmType = try typeName(value["$Type"], of: name + "/" + member, malformed)
            switch kind {
            case "NavigationProperty":
                guard let target = edmType else { throw malformed("the navigation property \"\(name)/\(member)\" has no $Type") }
                type.navigationProperties.append(FMODataNavigationProperty(name: member, targetType: target,
                                                                           isCollection: value["$Collection"]?.bool == true))
            case nil, "Property":
                type.properties.append(FMODataProperty(name: member, edmType: edmType ?? "Edm.String",
                                                       nullable: value["$Nullable"]?.bool ?? false,
                                                       defaultValue: value["$DefaultValue"]?.text,
                                                       annotations: annotations(value)))
            default:
                continue
            }
        }
        return type
    }

    private static func entitySet(_ name: String, _ element: Value, _ malformed: (String) -> FMError) throws(FMError) -> FMODataEntitySet {
        guard let type = try typeName(element["$Type"], of: name, malformed) else { throw malformed("the entity set \"\(name)\" has no $Type") }
        var set = FMODataEntitySet(name: name, entityType: type)
        if let bindings = element["$NavigationPropertyBinding"] {
            guard let pairs = bindings.members else { throw malformed("$NavigationPropertyBinding of \"\(name)\" is not an object") }
            for (path, target) in pairs {
                guard let target = target.string else { throw malformed("a binding of \"\(name)\" is not a string") }
                set.navigationBindings[path] = target
            }
        }
        return set
    }

    /// The body as an ordered value: `-1006` when it is not JSON at all, `-1007` for truncated or invalid JSON.
    private static func parse(_ body: Data, status: Int) throws(FMError) -> Value {
        let result: Result<Value, JSONReader.Failure> = body.withUnsafeBytes { buffer in
            do throws(JSONReader.Failure) {
                let tape = try JSONTape(buffer)
                let reader = JSONTapeReader(bytes: buffer, tape: tape)
                defer { reader.close() }
                return .success(value(reader, 0))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value): return value
        case .failure:
            throw Envelope.looksLikeJSON(body) ? .malformed("truncated or invalid JSON", status: status) : .notJSON(status: status)
        }
    }

    private static func value(_ reader: JSONTapeReader, _ index: Int) -> Value {
        switch reader.nodes[index].kind {
        case .string, .key: return .string(reader.string(index))
        case .true: return .bool(true)
        case .false: return .bool(false)
        case .null: return .null
        case .number: return reader.number(index).map { .number($0.text(reader.bytes)) } ?? .null
        case .array: return .array(reader.members(of: index).map { value(reader, $0) })
        case .object:
            var members: [(key: String, value: Value)] = []
            members.reserveCapacity(Int(reader.nodes[index].count))
            reader.forEachMember(of: index) { key, member in members.append((reader.string(key), value(reader, member))) }
            return .object(members)
        }
    }
}

extension FMODataMetadata {
    /// Reads a `$metadata` document in JSON CSDL (what ``FMOData/metadata(completion:)`` asks for with
    /// `Accept: application/json`), for example one saved to a file for `fm-codegen --odata`.
    ///
    /// - Throws: ``FMError`` `-1006` when `json` is not JSON at all (an XML document, say), `-1007` when it is
    ///   JSON but not CSDL, or has a member of the wrong type.
    public init(json: Data) throws(FMError) {
        self = try ODataMetadataReader.metadata(json, status: 200)
    }
}
