import Foundation

/// Turns FileMaker names (layouts, fields, portals) into readable, valid Swift identifiers.
///
/// Words are split at every character that cannot be part of a Swift identifier (spaces, punctuation,
/// `::`, `_`) and joined in camel case; a leading digit gets a `_` in front; a Swift keyword is written
/// in backticks; a name that would be empty is `field`. ``Namer`` makes names distinct.
enum Naming {
    /// Swift keywords that a property or case name cannot be without backticks.
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
        "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default",
        "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch",
        "where", "while", "as", "false", "is", "nil", "super", "throws", "true", "try", "await", "async",
        "any", "some", "consume", "copy", "borrowing", "consuming", "discard", "each", "macro", "package",
        "Any", "Self", "Type", "Protocol", "self",
    ]
    /// Keywords that stay special even in backticks in some positions: they get a suffix instead.
    static let unusable: Set<String> = ["self", "Self", "Type", "Protocol", "init", "deinit", "subscript", "super", "_"]

    /// The words of `name`: runs of identifier characters, split further at lower-to-upper case changes
    /// only where the run is already camel case is not needed: the run's own casing is kept.
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        for scalar in name.unicodeScalars {
            if scalar != "_" && (scalar.properties.isXIDContinue) {
                current.unicodeScalars.append(scalar)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `word` with its leading capitals lowered: `Name` → `name`, `ID` → `id`, `HTTPCode` → `httpCode`.
    static func lowerFirst(_ word: String) -> String {
        let scalars = Array(word.unicodeScalars)
        var upper = 0
        while upper < scalars.count, scalars[upper].properties.isUppercase { upper += 1 }
        if upper == 0 { return word }
        // Keep the capital that starts the next word (`HTTPCode`: `C`).
        let lowered = upper == scalars.count || upper == 1 ? upper : upper - 1
        var result = String.UnicodeScalarView()
        for (i, scalar) in scalars.enumerated() {
            if i < lowered { result.append(contentsOf: String(scalar).lowercased().unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }

    /// `word` with its first letter a capital.
    static func upperFirst(_ word: String) -> String {
        guard let first = word.first else { return word }
        return first.uppercased() + word.dropFirst()
    }

    /// A lowerCamelCase identifier for `name` (before making it distinct), in Unicode normal form C.
    static func property(_ name: String) -> String {
        let parts = words(name.precomposedStringWithCanonicalMapping)
        guard let first = parts.first else { return "field" }
        var result = lowerFirst(first) + parts.dropFirst().map(upperFirst).joined()
        if let head = result.unicodeScalars.first, !head.properties.isXIDStart { result = "_" + result }
        return result.precomposedStringWithCanonicalMapping
    }

    /// An UpperCamelCase type name for `name` (before making it distinct), in Unicode normal form C.
    static func type(_ name: String) -> String {
        let parts = words(name.precomposedStringWithCanonicalMapping)
        guard !parts.isEmpty else { return "Layout" }
        var result = parts.map(upperFirst).joined()
        if let head = result.unicodeScalars.first, !head.properties.isXIDStart { result = "Layout" + result }
        return result.precomposedStringWithCanonicalMapping
    }

    /// The longest prefix of `text`, in whole characters, of at most `bytes` UTF-8 bytes.
    static func prefix(_ text: String, bytes: Int) -> String {
        var result = ""
        var count = 0
        for character in text {
            count += character.utf8.count
            if count > bytes { break }
            result.append(character)
        }
        return result
    }

    /// What two names must differ in to be distinct: case (folded, so `ß` meets `SS`) and the Unicode form
    /// (canonically equal text is equal) do not count, as on a case-insensitive disk or in a reader's eye.
    static func foldKey(_ name: String) -> String {
        name.uppercased().lowercased().precomposedStringWithCanonicalMapping
    }

    /// A key equal only for the same Unicode scalars (Swift's `==` also equates canonically equal text).
    static func exactKey(_ name: String) -> [UInt32] {
        name.unicodeScalars.map(\.value)
    }

    /// `identifier` as it is written in code: a keyword in backticks.
    static func code(_ identifier: String) -> String {
        keywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    /// `text` as the inside of a Swift string literal.
    static func literal(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                // Controls (C0, DEL and C1: U+0085 is a line break to some editors), format characters
                // (bidi overrides) and line and paragraph separators are written as escapes.
                if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
                    || scalar.properties.generalCategory == .lineSeparator || scalar.properties.generalCategory == .paragraphSeparator {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `text` for a doc comment: on one line, backticks kept out of code spans.
    static func doc(_ text: String) -> String {
        literal(text).replacingOccurrences(of: "`", with: "'")
    }
}

/// Hands out distinct identifiers within one scope, in the order asked: the second `eMail` is `eMail2`.
///
/// Names are distinct after case folding and Unicode normalisation (`Artists` and `artists` are
/// `Artists` and `Artists2`, so their files do not meet on a case-insensitive disk), and at most
/// `maxBytes` UTF-8 bytes long when a limit is given (file names are bounded in bytes).
struct Namer {
    private var taken: Set<String>
    private let maxBytes: Int
    /// Per stem (folded), the first number not yet tried: numbers are never given back, so the next claim
    /// of the same stem starts there (without it, n names with one stem probed n²/2 candidates).
    private var nextNumber: [String: Int] = [:]
    /// How many candidates were looked up, in all (the work done, for tests).
    private(set) var probes = 0

    /// A scope where `reserved` are already taken (members the generated code declares itself).
    init(reserved: Set<String> = [], maxBytes: Int = .max) {
        taken = Set(reserved.map(Naming.foldKey))
        self.maxBytes = maxBytes
    }

    /// A distinct name for `base`.
    mutating func claim(_ base: String) -> String {
        let stem = Naming.unusable.contains(base) ? base + "_" : base
        var candidate = Naming.prefix(stem, bytes: maxBytes)
        probes += 1
        if taken.insert(Naming.foldKey(candidate)).inserted { return candidate }
        let family = Naming.foldKey(stem)
        var number = nextNumber[family] ?? 2
        repeat {
            let suffix = String(number)
            candidate = Naming.prefix(stem, bytes: maxBytes - suffix.utf8.count) + suffix
            number += 1
            probes += 1
        } while !taken.insert(Naming.foldKey(candidate)).inserted
        nextNumber[family] = number
        return candidate
    }
}
