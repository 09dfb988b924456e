import Foundation

extension Result where Failure == FMError {
    /// The value on success, `nil` on failure.
    var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }

    /// `"0"` on success, else the FileMaker or client code of the error.
    var code: String {
        switch self {
        case .success: return "0"
        case .failure(let error): return error.code
        }
    }

    /// The `(value?, code)` pair the callback surfaces complete with.
    var legacyPair: (Success?, String) { (value, code) }
}

extension FMError {
    /// `true` for FileMaker's "No records match the request" (401), which finds report as an empty found set.
    var isNoRecordsMatch: Bool { code == "401" }

    /// `true` where a range read (`GET …/records`) found no records: 401 past the end, or 101 "Record is
    /// missing", FileMaker Server's answer for a layout whose table is empty.
    var isEmptyRangeRead: Bool { code == "401" || code == "101" }
}
