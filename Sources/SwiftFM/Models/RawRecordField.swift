import Foundation

extension Dictionary where Key == String, Value == Any {
    /// A field of a raw record, typed by the caller: `record.field("name", as: String.self)` instead of
    /// `(record["fieldData"] as? [String: Any])?["name"] as? String`.
    ///
    /// Reads `fieldData[name]` when the dictionary is a record (it has `fieldData`), else `self[name]` (a
    /// portal row, whose fields are at its top level, or a `fieldData` dictionary itself). `nil` when the
    /// field is missing or holds another type (FileMaker numbers are `NSNumber`s: ask for `Int` or `Double`;
    /// a number sent as text is a `String`).
    ///
    /// - Parameters:
    ///   - name: the field name as the layout sends it (`name(2)` for a repetition, `TO::field` in a portal row).
    ///   - type: the type to read it as.
    /// - Returns: the value, or `nil`.
    public func field<T>(_ name: String, as type: T.Type = T.self) -> T? {
        let fields = (self["fieldData"] as? [String: Any]) ?? self
        return fields[name] as? T
    }
}
