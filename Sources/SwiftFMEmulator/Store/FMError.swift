import Foundation

/// A FileMaker-level failure: the code, message and HTTP status the emulator answers.
struct FMError: Error, Sendable {
    var code: String
    var message: String
    var status: Int
    /// The field a validation or type error is about, when known (used to name it in schema errors).
    var field: String?

    init(_ code: String, _ message: String? = nil, status: Int? = nil, field: String? = nil) {
        self.field = field
        self.code = code
        self.message = message ?? FMError.text(for: code)
        self.status = status ?? FMError.defaultStatus(for: code)
    }

    /// FileMaker's answer to parameters it does not know: HTTP 400, code 960, all names listed
    /// (`Unknown parameter(s): a, b`; WIRE.md §17).
    static func unknownParameters(_ names: [String]) -> FMError {
        FMError("960", "Unknown parameter(s): " + names.joined(separator: ", "), status: 400)
    }

    static func defaultStatus(for code: String) -> Int {
        switch code {
        case "10", "212", "952": return 401
        case "1708", "958", "960", "1706", "1707", "1710": return 400
        case "1704": return 405
        case "0": return 200
        default: return 500
        }
    }

    static func text(for code: String) -> String {
        switch code {
        case "0": return "OK"
        case "-1": return "Unknown error"
        case "3": return "Command is unavailable (for example, wrong operating system or mode)"
        case "9": return "Insufficient privileges"
        case "10": return "HTTP Authorization header or OAuth headers are missing."
        case "100": return "File is missing"
        case "101": return "Record is missing"
        case "102": return "Field is missing"
        case "103": return "Relationship is missing"
        case "104": return "Script is missing"
        case "105": return "Layout is missing"
        case "106": return "Table is missing"
        case "111": return "Field repetition is invalid"
        case "112": return "Window is missing"
        case "200": return "Record access is denied"
        case "201": return "Field cannot be modified"
        case "202": return "Field access is denied"
        case "212": return "Invalid user account and/or password; please try again"
        case "214": return "Too many login attempts"
        case "301": return "Record is in use by another user"
        case "306": return "Record modification ID does not match"
        case "400": return "Find criteria are empty"
        case "401": return "No records match the request"
        case "402": return "Selected field is not a match field for a lookup"
        case "500": return "Date value does not meet validation entry options"
        case "501": return "Time value does not meet validation entry options"
        case "502": return "Number value does not meet validation entry options"
        case "503": return "Value in field is not within the range specified in validation entry options"
        case "504": return "Value in field is not unique, as required in validation entry options"
        case "505": return "Value in field is not an existing value in the file, as required in validation entry options"
        case "506": return "Value in field is not listed in the value list specified in validation entry option"
        case "507": return "Value in field failed calculation test of validation entry option"
        case "508": return "Invalid value entered in Find mode"
        case "509": return "Field requires a valid value"
        case "510": return "Related value is empty or unavailable"
        case "511": return "Value in field exceeds maximum field size"
        case "802": return "Unable to open file"
        case "952": return "Invalid FileMaker Data API token (*)"
        case "953": return "Exceeded limit on data the FileMaker Data API and OData can transmit (*)"
        case "954": return "Unsupported XML grammar (*)"
        case "955": return "No database name (*)"
        case "956": return "Maximum number of database or Admin API sessions exceeded (*)"
        case "957": return "Conflicting commands (*)"
        case "958": return "Parameter missing (*)"
        case "959": return "Custom Web Publishing technology is disabled"
        case "960": return "Parameter is invalid"
        case "1704": return "Resource doesn't support the specified HTTP verb"
        case "1706": return "Parameter isn't supported (*)"
        case "1707": return "Required parameter wasn't specified in the request (*)"
        case "1708": return "Parameter value is invalid"
        case "1710": return "JSON input isn't syntactically valid (*)"
        default: return "Unknown error"
        }
    }
}
