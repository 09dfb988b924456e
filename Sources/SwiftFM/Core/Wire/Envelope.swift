import Foundation

/// One entry of the `messages` array of a Data API answer.
struct FMMessage: Sendable, Equatable {
    var code: String
    var message: String
}

/// Reading Data API envelopes: errors for non-200 answers, and helpers for the decoders of 200 answers.
enum Envelope {
    /// The error for a non-200 answer: FileMaker's code and message from `messages[0]`, `-1006` when the
    /// body is not JSON (an HTML page from a proxy), `-1007` when it is JSON of the wrong shape or truncated,
    /// and `-1007` too when it says code `"0"` (success) or no code: an error status never completes with
    /// FileMaker's success code.
    ///
    /// With `odata`, the body is read in FileMaker's OData shape instead (``ODataEnvelope/error(status:body:)``).
    static func error(status: Int, body: Data, odata: Bool = false) -> FMError {
        if odata { return ODataEnvelope.error(status: status, body: body) }
        let object: Any
        do {
            object = try JSONReader.parse(body, fragments: true)
        } catch {
            return looksLikeJSON(body)
                ? .malformed("truncated or invalid JSON", status: status)
                : .notJSON(status: status)
        }
        guard let dictionary = object as? [String: Any] else {
            return .malformed("the body is not a JSON object", status: status)
        }
        switch firstMessage(in: dictionary) {
        case .success(let message) where message.code == "0" || message.code.isEmpty:
            return .malformed("HTTP \(status) with FileMaker code \(message.code.isEmpty ? "\"\"" : "0 (success)")", status: status)
        case .success(let message):
            return FMError(code: message.code, message: message.message, httpStatus: status)
        case .failure(let error):
            return FMError(code: error.code, message: error.message, httpStatus: status)
        }
    }

    /// Parses a 200 body once (``JSONReader``: the values `JSONSerialization` gives, faster) and returns its
    /// `response` object.
    ///
    /// Throws `-1006` for a non-JSON body, `-1007` for a body without `messages` or `response`, and
    /// FileMaker's error when `messages[0].code` is not `"0"`. With `checkMessages` false (an answer the
    /// engine already accepted by its status) `messages` is not read, and any unreadable body is `-1007`.
    /// `parts`: see ``JSONReader/parse(_:fragments:templatesFrom:splitFrom:parts:)``.
    static func response(from body: Data, status: Int = 200, checkMessages: Bool = true, parts: Int = 1) throws(FMError) -> [String: Any] {
        let object: Any
        do {
            object = try JSONReader.parse(body, parts: parts)
        } catch {
            guard checkMessages else {
                throw FMError(code: FMError.ClientCode.malformedResponse, message: "Unexpected response: the body is not valid JSON",
                              httpStatus: status, underlying: FMError.underlyingText(error))
            }
            throw looksLikeJSON(body) ? .malformed("truncated or invalid JSON", status: status) : .notJSON(status: status)
        }
        guard let dictionary = object as? [String: Any] else {
            throw .malformed("the body is not a JSON object", status: status)
        }
        if checkMessages {
            let message: FMMessage
            switch firstMessage(in: dictionary) {
            case .success(let first): message = first
            case .failure(let error): throw error
            }
            guard message.code == "0" else { throw failure(message, status: status) }
        }
        guard let response = dictionary["response"] as? [String: Any] else {
            throw .malformed("no \"response\" object", status: status)
        }
        return response
    }

    /// Decodes the `response` object of a 200 body with one `JSONDecoder` pass over the bytes (`messages`
    /// is not read: the engine accepted the answer by its status).
    static func decode<R: Decodable>(_ type: R.Type, from body: Data, status: Int) throws(FMError) -> R {
        do {
            return try JSONDecoder().decode(ResponseOnly<R>.self, from: body).response
        } catch {
            throw FMError(code: FMError.ClientCode.malformedResponse,
                          message: "Unexpected response: cannot read \(R.self)",
                          httpStatus: status, underlying: FMError.underlyingText(error))
        }
    }

    /// The part of the envelope a success decoder needs.
    private struct ResponseOnly<R: Decodable>: Decodable {
        var response: R
    }

    /// The error of an answer whose `messages[0]` is not success: FileMaker's code and message, or `-1007` for an
    /// empty code (neither FileMaker's nor the client's).
    static func failure(_ message: FMMessage, status: Int) -> FMError {
        message.code.isEmpty ? .malformed("FileMaker code \"\"", status: status)
            : FMError(code: message.code, message: message.message, httpStatus: status)
    }

    /// `messages[0]` of an envelope, or `-1007`.
    static func firstMessage(in dictionary: [String: Any]) -> Result<FMMessage, FMError> {
        guard let messages = dictionary["messages"] as? [Any] else {
            return .failure(.malformed("no messages array", status: nil))
        }
        guard let first = messages.first as? [String: Any] else {
            return .failure(.malformed("empty messages array", status: nil))
        }
        guard let code = FMError.dataAPICode(first["code"]) else {
            return .failure(.malformed("messages[0].code is missing or not a FileMaker code", status: nil))
        }
        return .success(FMMessage(code: code, message: FMError.serverText(first["message"] as? String ?? "")))
    }

    /// `true` when the first non-blank byte opens a JSON object or array (a truncated body rather than HTML).
    static func looksLikeJSON(_ body: Data) -> Bool {
        for byte in body {
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF: continue // whitespace and a UTF-8 BOM
            case UInt8(ascii: "{"), UInt8(ascii: "["): return true
            default: return false
            }
        }
        return false
    }
}
