import Foundation

extension ODataEnvelope {
    /// `@odata.nextLink` (or `@nextLink`) of a collection answer: `nil` on the last page.
    static func nextLink(in object: [String: Any], status: Int) throws(FMError) -> URL? {
        switch annotation("nextLink", in: object) {
        case nil, is NSNull: return nil
        case let text as String:
            guard let url = URL(string: text) else { throw .malformed("@odata.nextLink is not a URL", status: status) }
            return url
        default: throw .malformed("@odata.nextLink is not a string", status: status)
        }
    }

    /// ``typedPage(_:_:status:)`` straight from the answer's bytes, no dictionaries in between: `nil` when the
    /// body is not an object whose `value` decodes as `[T]` (the caller then takes the path that says why).
    static func typedPageFromBytes<T: Decodable>(_ type: T.Type, _ body: Data, status: Int) throws(FMError) -> FMODataTypedPage<T>? {
        guard let fast = try? FileMakerDecoder().decodeMember([T].self, "value", of: body) else { return nil }
        return FMODataTypedPage(rows: fast.value, count: try count(in: fast.others, status: status),
                                nextLink: try nextLink(in: fast.others, status: status))
    }

    /// A collection answer with its rows decoded into `T` with FileMaker's rules (as the Data API's typed
    /// reads), read from the answer's bytes in one pass, annotations (`@odata.id`, …) left in as keys `T`
    /// does not read. A row that does not decode gives `-1007`
    /// naming the row and the field.
    static func typedPage<T: Decodable>(_ type: T.Type, _ body: Data, status: Int) throws(FMError) -> FMODataTypedPage<T> {
        // Anything that does not read from the bytes goes the slow way below, which names what was wrong.
        if let page = try typedPageFromBytes(T.self, body, status: status) { return page }
        let object = try object(body, status: status)
        guard let values = object["value"] as? [Any] else { throw .malformed("no \"value\" array", status: status) }
        let decoder = FileMakerDecoder()
        let rows: [T]
        if let all = try? decoder.decode([T].self, from: values) {
            rows = all
        } else {
            // Which row, and why (the error path only).
            for (index, value) in values.enumerated() {
                guard value is [String: Any] else { throw .malformed("a row is not a JSON object", status: status) }
                do {
                    _ = try decoder.decode(T.self, from: value)
                } catch {
                    throw FMError(code: FMError.ClientCode.malformedResponse,
                                  message: "Unexpected response: cannot read row \(index) as \(T.self): \(FileMakerDecoder.describe(error))",
                                  httpStatus: status, underlying: FMError.underlyingText(error))
                }
            }
            throw .malformed("the rows cannot be read as [\(T.self)]", status: status)
        }
        return FMODataTypedPage(rows: rows, count: try count(in: object, status: status), nextLink: try nextLink(in: object, status: status))
    }
}
