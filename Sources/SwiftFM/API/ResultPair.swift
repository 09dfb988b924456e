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
