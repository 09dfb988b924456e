import Foundation

/// Reading FileMaker's OData answers: errors, collections, records, counts, script results, `$metadata`.
enum ODataEnvelope {
    /// The error of a failed answer: `{"error":{"code":"8309","message":"…"}}` (the code a string or a
    /// number; the message a string or `{"value": …}`), or the XML form `<m:code>…</m:code>`. FileMaker's
    /// code is kept as it is, negative OData engine codes (`-1002`, `-1020`, …) included, with the HTTP
    /// status. A body that is neither is `-1006` (not JSON, an HTML page from a proxy) or `-1007`; a body
    /// that says code `"0"` or none is `-1007`: an error status never completes with the success code.
    static func error(status: Int, body: Data) -> FMError {
        let object: Any
        do {
            object = try JSONReader.parse(body, fragments: true)
        } catch {
            if let xml = xmlError(body, status: status) { return xml }
            return Envelope.looksLikeJSON(body) ? .malformed("truncated or invalid JSON", status: status) : .notJSON(status: status)
        }
        guard let dictionary = object as? [String: Any], let error = dictionary["error"] as? [String: Any] else {
            return .malformed("HTTP \(status) without an OData error object", status: status)
        }
        guard let code = FMError.serverCode(error["code"]) else {
            return .malformed("error.code is missing or not a FileMaker code", status: status)
        }
        let message: String
        if let text = error["message"] as? String {
            message = FMError.serverText(text)
        } else if let wrapped = error["message"] as? [String: Any], let text = wrapped["value"] as? String {
            message = FMError.serverText(text)
        } else {
            message = ""
        }
        guard !code.isEmpty, code != "0" else {
            return .malformed("HTTP \(status) with FileMaker code \(code.isEmpty ? "\"\"" : "0 (success)")", status: status)
        }
        return FMError(code: code, message: message, httpStatus: status, sentByServer: true)
    }

    /// `<m:code>…</m:code>` and `<m:message>…</m:message>` of an XML error, or `nil`.
    private static func xmlError(_ body: Data, status: Int) -> FMError? {
        guard body.count < 64 * 1024, let text = String(data: body, encoding: .utf8),
              let code = FMError.serverCode(between(text, "<m:code>", "</m:code>")?.trimmingCharacters(in: .whitespacesAndNewlines)),
              !code.isEmpty, code != "0" else { return nil }
        return FMError(code: code, message: FMError.serverText(between(text, "<m:message>", "</m:message>") ?? ""), httpStatus: status,
                       sentByServer: true)
    }

    private static func between(_ text: String, _ open: String, _ close: String) -> String? {
        guard let start = text.range(of: open), let end = text.range(of: close, range: start.upperBound..<text.endIndex) else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// The JSON object of a 2xx body, or `-1006`/`-1007`.
    static func object(_ body: Data, status: Int) throws(FMError) -> [String: Any] {
        let object: Any
        do {
            object = try JSONReader.parse(body)
        } catch {
            throw Envelope.looksLikeJSON(body) ? .malformed("truncated or invalid JSON", status: status) : .notJSON(status: status)
        }
        guard let dictionary = object as? [String: Any] else { throw .malformed("the body is not a JSON object", status: status) }
        return dictionary
    }

    /// A row without its annotations (`@id`, `@editLink`, `@odata.*`): keys that start with `@`.
    static func fields(_ row: [String: Any]) -> [String: Any] {
        // The first byte, not `hasPrefix`: this runs for every key of every row of a page.
        guard row.keys.contains(where: isAnnotation) else { return row }
        return row.filter { !isAnnotation($0.key) }
    }

    /// A created record without its annotations but its address: `@odata.id` and `@odata.editLink` (OData 4.0's
    /// spelling, the version SwiftFM asks for, whether the server wrote them so or as 4.01's `@id` and `@editLink`),
    /// since a record of a table without a key is addressed by the ROWID only they carry (`…/Artists(12)`).
    /// An address is a string: the first spelling that holds one; a value that is not a string (null, a number, an
    /// object) is no address, left out and never hiding the other spelling's. Nothing is followed.
    static func createdRecord(_ row: [String: Any]) -> [String: Any] {
        var record = fields(row)
        for name in ["id", "editLink"] {
            if let address = ["@odata." + name, "@" + name].lazy.compactMap({ row[$0] as? String }).first {
                record["@odata." + name] = address
            }
        }
        return record
    }

    /// A key that starts with `@`.
    private static func isAnnotation(_ key: String) -> Bool { key.utf8.first == UInt8(ascii: "@") }

    /// An annotation in either spelling: `@odata.<name>` (OData 4.0) or `@<name>` (4.01).
    static func annotation(_ name: String, in object: [String: Any]) -> Any? {
        object["@odata." + name] ?? object["@" + name]
    }

    /// `@odata.count` as an integer (a JSON number or, with `IEEE754Compatible`, a string); a negative count is
    /// no count (`-1007`).
    static func count(in object: [String: Any], status: Int) throws(FMError) -> Int? {
        guard let value = annotation("count", in: object) else { return nil }
        if let number = value as? NSNumber, String(cString: number.objCType) != "c", let integer = RawJSON.exactInt(number), integer >= 0 {
            return integer
        }
        if let text = value as? String, let integer = Int(text.trimmingCharacters(in: .whitespaces)), integer >= 0 { return integer }
        throw .malformed("@odata.count is not a count", status: status)
    }

    /// A collection answer: its rows, count and next link.
    static func page(_ body: Data, status: Int) throws(FMError) -> FMODataPage {
        let object = try object(body, status: status)
        guard let values = object["value"] as? [Any] else { throw .malformed("no \"value\" array", status: status) }
        var rows: [[String: Any]] = []
        rows.reserveCapacity(values.count)
        for value in values {
            guard let row = value as? [String: Any] else { throw .malformed("a row is not a JSON object", status: status) }
            rows.append(fields(row))
        }
        return FMODataPage(rows: rows, count: try count(in: object, status: status), nextLink: try nextLink(in: object, status: status))
    }

    /// A `$count` answer: a decimal integer as plain text.
    static func plainCount(_ body: Data, status: Int) throws(FMError) -> Int {
        let text = String(decoding: body, as: UTF8.self).trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "\u{FEFF}")))
        guard let count = Int(text), count >= 0 else { throw .malformed("the count is not an integer", status: status) }
        return count
    }

    /// A script answer: `{"scriptResult":{"code":0,"resultParameter":"…"}}` (Claris) or the older flat
    /// `{"scriptResult":"…","scriptError":"0"}`.
    static func script(_ body: Data, status: Int) throws(FMError) -> FMODataScriptResult {
        let object = try object(body, status: status)
        if let nested = object["scriptResult"] as? [String: Any] {
            return FMODataScriptResult(code: try codeText(nested["code"], status: status) ?? "0",
                                       resultParameter: text(nested["resultParameter"]))
        }
        if object["scriptResult"] != nil || object["scriptError"] != nil {
            return FMODataScriptResult(code: try codeText(object["scriptError"], status: status) ?? "0",
                                       resultParameter: text(object["scriptResult"]))
        }
        throw .malformed("no \"scriptResult\"", status: status)
    }

    private static func codeText(_ value: Any?, status: Int) throws(FMError) -> String? {
        switch value {
        case nil, is NSNull: return nil
        default:
            // A script's own code: a FileMaker code, never one in the client-side range (OData's engine codes come in an error body).
            guard let code = FMError.scriptCode(value) else { throw .malformed("the script code is not a FileMaker code", status: status) }
            return code
        }
    }

    private static func text(_ value: Any?) -> String? {
        switch value {
        case nil, is NSNull: return nil
        case let text as String: return text
        case let number as NSNumber: return number.stringValue
        default:
            guard let value, JSONSerialization.isValidJSONObject([value]),
                  let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]) else { return nil }
            return String(decoding: data, as: UTF8.self)
        }
    }
}
