import Foundation
import SwiftFM

/// A small reader for the XML form of `$metadata` (CSDL XML, what FileMaker Server serves by default).
///
/// No XML library: on Linux Foundation's parser lives in FoundationXML, which links libxml2, and fm-codegen
/// must run without it. This reads what CSDL uses — elements, attributes, text, comments, processing
/// instructions, CDATA, the five named entities and numeric character references — and refuses a document
/// type declaration and anything malformed. Depth, the number of elements and the attributes of one element
/// are bounded (a tree of elements costs about 25 times the bytes of `<a/>`s it is read from).
enum ODataXML {
    /// An element: its name without the namespace prefix, its attributes (also without prefixes), its
    /// child elements and its text.
    final class Element {
        let name: String
        let attributes: [String: String]
        var children: [Element] = []
        var text = ""

        init(name: String, attributes: [String: String]) {
            self.name = name
            self.attributes = attributes
        }

        subscript(attribute: String) -> String? { attributes[attribute] }

        func elements(_ name: String) -> [Element] { children.filter { $0.name == name } }
    }

    /// A document that cannot be read, with where.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static let maxDepth = 64
    /// The most elements a document may have: far above the largest `$metadata` (a field is about five).
    static let maxElements = 4_000_000
    /// The most attributes one element may have (CSDL's have a handful).
    static let maxAttributes = 256

    /// The document's root element.
    static func parse(_ data: Data, maxElements: Int = maxElements) throws -> Element {
        var reader = Reader(data)
        var elements = 0
        try reader.checkEncoding()
        var stack: [Element] = []
        var root: Element?
        while !reader.isAtEnd {
            if !reader.starts("<") {
                let text = try reader.readText()
                if let top = stack.last {
                    top.text += text
                } else if !text.allSatisfy({ $0.isWhitespace }) {
                    throw reader.fail("text outside the root element")
                }
                continue
            }
            if reader.starts("<?") { try reader.skip(past: "?>"); continue }
            if reader.starts("<!--") { try reader.skip(past: "-->"); continue }
            if reader.starts("<![CDATA[") {
                let text = try reader.readCDATA()
                guard let top = stack.last else { throw reader.fail("CDATA outside the root element") }
                top.text += text
                continue
            }
            if reader.starts("<!") { throw reader.fail("a document type declaration (not read)") }
            if reader.starts("</") {
                let name = try reader.readEndTag()
                guard let top = stack.popLast(), top.name == local(name) else { throw reader.fail("an end tag </\(name)> that does not match") }
                continue
            }
            elements += 1
            guard elements <= maxElements else { throw reader.fail("more than \(maxElements) elements") }
            let tag = try reader.readStartTag()
            let element = Element(name: local(tag.name), attributes: tag.attributes)
            if let top = stack.last {
                top.children.append(element)
            } else {
                guard root == nil else { throw reader.fail("a second root element") }
                root = element
            }
            if !tag.selfClosing {
                stack.append(element)
                guard stack.count <= maxDepth else { throw reader.fail("elements nested too deeply") }
            }
        }
        guard stack.isEmpty else { throw Failure(description: "XML: the document ends inside <\(stack.last?.name ?? "")>") }
        guard let root else { throw Failure(description: "XML: no root element") }
        return root
    }

    /// A cursor over a document's bytes that reads one piece of markup or text at a time.
    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        /// Starts after a UTF-8 byte order mark, if any.
        init(_ data: Data) {
            bytes = Array(data)
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        }

        /// Throws unless the document is UTF-8, the only encoding read: one that declares another encoding
        /// and has a byte outside ASCII, or any byte sequence that is not UTF-8 (a Latin-1 `é` read as
        /// UTF-8 became U+FFFD, and a field name that matches nothing on the server), is refused.
        func checkEncoding() throws {
            if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
                throw Failure(description: "XML: the document is UTF-16 (save it as UTF-8)")
            }
            var declared: String?
            if starts("<?xml"), let end = bytes[index...].indices.first(where: { bytes[$0...].starts(with: "?>".utf8) }) {
                let declaration = String(decoding: bytes[index..<end], as: UTF8.self)
                if let range = declaration.range(of: "encoding") {
                    let value = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\"" || $0 == "'" }
                    declared = String(value.prefix { $0 != "\"" && $0 != "'" && $0 != " " && $0 != "?" })
                }
            }
            var decoder = UTF8()
            var iterator = bytes[index...].makeIterator()
            var offset = index
            while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let scalar):
                    if scalar.value > 0x7F, let declared, !["utf-8", "utf8"].contains(declared.lowercased()) {
                        throw Failure(description: "XML: the document declares encoding \(declared), which is not read, and has a byte "
                                      + "outside ASCII at byte \(offset) (save it as UTF-8)")
                    }
                    offset += UTF8.width(scalar)
                case .emptyInput:
                    return
                case .error:
                    throw Failure(description: "XML: a byte sequence that is not UTF-8 at byte \(offset)"
                                  + (declared.map { " (the document declares encoding \($0); save it as UTF-8)" } ?? " (save it as UTF-8)"))
                }
            }
        }

        /// Whether every byte has been read.
        var isAtEnd: Bool { index >= bytes.count }

        /// A failure at the current byte.
        func fail(_ what: String) -> Failure { Failure(description: "XML: \(what) at byte \(index)") }

        /// Whether the bytes from the current one start with `text`.
        func starts(_ text: String) -> Bool { bytes[index...].starts(with: text.utf8) }

        /// Moves past the next `end`; throws when there is none.
        mutating func skip(past end: String) throws {
            let marker = Array(end.utf8)
            while index < bytes.count {
                if bytes[index...].starts(with: marker) { index += marker.count; return }
                index += 1
            }
            throw fail("unterminated markup (no \(end))")
        }

        /// A name up to white space, `>`, `/` or `=` (possibly empty).
        mutating func readName() -> String {
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                    || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=") { break }
                index += 1
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        /// Moves past white space.
        mutating func skipSpace() {
            while index < bytes.count, [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")].contains(bytes[index]) {
                index += 1
            }
        }

        /// The text up to the next `<` (or the end), its references replaced.
        mutating func readText() throws -> String {
            let start = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "<") { index += 1 }
            return try ODataXML.decode(bytes[start..<index]) { fail($0) }
        }

        /// The text of a `<![CDATA[…]]>` section, read as is.
        mutating func readCDATA() throws -> String {
            index += 9
            let start = index
            try skip(past: "]]>")
            return String(decoding: bytes[start..<(index - 3)], as: UTF8.self)
        }

        /// The name of an end tag `</name>`.
        mutating func readEndTag() throws -> String {
            index += 2
            let name = readName()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ">") else { throw fail("a malformed end tag") }
            index += 1
            return name
        }

        /// A start tag `<name …>` or `<name …/>`: its name, its attributes without prefixes (namespace
        /// declarations left out), and whether it closes itself.
        mutating func readStartTag() throws -> (name: String, attributes: [String: String], selfClosing: Bool) {
            index += 1
            let name = readName()
            guard !name.isEmpty else { throw fail("an element without a name") }
            var attributes: [String: String] = [:]
            while true {
                skipSpace()
                guard index < bytes.count else { throw fail("an unterminated start tag") }
                if bytes[index] == UInt8(ascii: ">") { index += 1; return (name, attributes, false) }
                if bytes[index] == UInt8(ascii: "/") {
                    guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else { throw fail("a malformed start tag") }
                    index += 2
                    return (name, attributes, true)
                }
                let (attribute, value) = try readAttribute()
                guard attributes.count < ODataXML.maxAttributes else { throw fail("more than \(ODataXML.maxAttributes) attributes in <\(name)>") }
                guard !attribute.hasPrefix("xmlns") else { continue }
                // Two readers of one document must not see two names: an attribute given twice is an error.
                guard attributes.updateValue(value, forKey: ODataXML.local(attribute)) == nil else {
                    throw fail("the attribute \(attribute) twice in <\(name)>")
                }
            }
        }

        /// An attribute `name="value"` or `name='value'`, its value's references replaced.
        mutating func readAttribute() throws -> (name: String, value: String) {
            let attribute = readName()
            guard !attribute.isEmpty else { throw fail("a malformed attribute") }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { throw fail("an attribute without a value") }
            index += 1
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw fail("an unquoted attribute value")
            }
            let quote = bytes[index]
            index += 1
            let start = index
            while index < bytes.count, bytes[index] != quote { index += 1 }
            guard index < bytes.count else { throw fail("an unterminated attribute value") }
            // XML reads a line break or tab written as such in an attribute value as a space (`&#10;` stays a
            // line break): `Name="a<LF>b"` is the field `a b`.
            var raw = ArraySlice<UInt8>()
            var position = start
            while position < index {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\r"), position + 1 < index, bytes[position + 1] == UInt8(ascii: "\n") { position += 1 }
                raw.append([UInt8(ascii: "\r"), UInt8(ascii: "\n"), UInt8(ascii: "\t")].contains(byte) ? UInt8(ascii: " ") : byte)
                position += 1
            }
            let value = try ODataXML.decode(raw) { fail($0) }
            index += 1
            return (attribute, value)
        }
    }

    /// `edmx:Edmx` → `Edmx`.
    static func local(_ name: String) -> String {
        guard let colon = name.lastIndex(of: ":") else { return name }
        return String(name[name.index(after: colon)...])
    }

    /// Text with its entity and character references replaced.
    /// Works on Unicode scalars, not characters: a combining mark after `;` (`&amp;\u{301}`) is text of its
    /// own, not part of the reference.
    static func decode(_ bytes: ArraySlice<UInt8>, _ fail: (String) -> Failure) throws -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("&") else { return text }
        var out = String.UnicodeScalarView()
        var rest = Substring(text).unicodeScalars
        while let amp = rest.firstIndex(of: "&") {
            out.append(contentsOf: rest[..<amp])
            guard let semi = rest[amp...].prefix(12).firstIndex(of: ";") else {
                throw fail("a bare & (write &amp;)")
            }
            let name = Substring(rest[rest.index(after: amp)..<semi])
            switch name {
            case "amp": out.append("&")
            case "lt": out.append("<")
            case "gt": out.append(">")
            case "quot": out.append("\"")
            case "apos": out.append("'")
            default:
                var scalar: Unicode.Scalar?
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    scalar = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if name.hasPrefix("#") {
                    scalar = UInt32(name.dropFirst(), radix: 10).flatMap(Unicode.Scalar.init)
                }
                guard let scalar else { throw fail("an unknown entity &\(name);") }
                out.append(scalar)
            }
            rest = rest[rest.index(after: semi)...]
        }
        out.append(contentsOf: rest)
        return String(out)
    }

    // MARK: CSDL

    /// Reads a CSDL XML document into ``FMODataMetadata`` (as ``FMODataMetadata/init(json:)`` reads JSON):
    /// every `Schema`'s entity types, the container's entity sets, actions as scripts, annotations by term.
    static func metadata(_ data: Data, maxElements: Int = maxElements) throws -> FMODataMetadata {
        let root = try parse(data, maxElements: maxElements)
        guard root.name == "Edmx" else { throw Failure(description: "XML: the root element is <\(root.name)>, not <edmx:Edmx>") }
        var metadata = FMODataMetadata(namespace: "")
        var sawSchema = false
        var scripts = Set<String>()
        for services in root.elements("DataServices") {
            for schema in services.elements("Schema") {
                sawSchema = true
                if metadata.namespace.isEmpty { metadata.namespace = schema["Namespace"] ?? "" }
                for child in schema.children {
                    switch child.name {
                    case "Annotation":
                        guard let term = child["Term"], let value = annotationValue(child) else { continue }
                        switch term {
                        case "ServerVersion", "com.filemaker.odata.ServerVersion": metadata.serverVersion = value
                        case "Org.OData.Core.V1.ProductVersion": if metadata.serverVersion == nil { metadata.serverVersion = value }
                        case "Org.OData.Core.V1.SchemaVersion": metadata.schemaVersion = value
                        default: break
                        }
                    case "EntityType":
                        metadata.entityTypes.append(try entityType(child))
                    case "EntityContainer":
                        for set in child.elements("EntitySet") {
                            guard let name = set["Name"], let type = set["EntityType"] else {
                                throw Failure(description: "CSDL: an EntitySet without Name or EntityType")
                            }
                            var entry = FMODataEntitySet(name: name, entityType: type)
                            for binding in set.elements("NavigationPropertyBinding") {
                                if let path = binding["Path"], let target = binding["Target"] { entry.navigationBindings[path] = target }
                            }
                            metadata.entitySets.append(entry)
                        }
                    case "Action", "Function":
                        if let name = child["Name"], scripts.insert(name).inserted { metadata.scripts.append(name) }
                    default:
                        break
                    }
                }
            }
        }
        guard sawSchema else { throw Failure(description: "CSDL: no <Schema> in <edmx:DataServices>") }
        return metadata
    }

    /// An annotation's value as text: its `String`/`Bool`/`Int`/`Decimal`/`EnumMember` attribute, or its
    /// `EnumMember`/`String` children joined by spaces.
    static func annotationValue(_ annotation: Element) -> String? {
        for attribute in ["String", "Bool", "Int", "Decimal", "EnumMember", "Date", "DateTimeOffset"] {
            if let value = annotation[attribute] { return value }
        }
        let members = annotation.children.filter { ["EnumMember", "String"].contains($0.name) }.map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
        return members.isEmpty ? nil : members.joined(separator: " ")
    }

    static func annotations(_ element: Element) -> [String: String] {
        var result: [String: String] = [:]
        for annotation in element.elements("Annotation") {
            if let term = annotation["Term"], let value = annotationValue(annotation) { result[term] = value }
        }
        return result
    }

    static func entityType(_ element: Element) throws -> FMODataEntityType {
        guard let name = element["Name"] else { throw Failure(description: "CSDL: an EntityType without a Name") }
        var type = FMODataEntityType(name: name, annotations: annotations(element))
        for key in element.elements("Key") {
            type.key += key.elements("PropertyRef").compactMap { $0["Name"] }
        }
        for property in element.elements("Property") {
            guard let field = property["Name"] else { throw Failure(description: "CSDL: a Property of \(name) without a Name") }
            type.properties.append(FMODataProperty(name: field, edmType: property["Type"] ?? "Edm.String",
                                                   nullable: property["Nullable"].map { $0 != "false" } ?? true,
                                                   defaultValue: property["DefaultValue"], annotations: annotations(property)))
        }
        for navigation in element.elements("NavigationProperty") {
            guard let field = navigation["Name"], var target = navigation["Type"] else { continue }
            let collection = target.hasPrefix("Collection(") && target.hasSuffix(")")
            if collection { target = String(target.dropFirst("Collection(".count).dropLast()) }
            type.navigationProperties.append(FMODataNavigationProperty(name: field, targetType: target, isCollection: collection))
        }
        return type
    }
}
