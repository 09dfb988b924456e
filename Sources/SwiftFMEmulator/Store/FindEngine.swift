import Foundation

/// FileMaker find-mode matching of one criterion against field values (WIRE.md §7).
///
/// Supported: plain words (each criterion word must match the start of a word, case-insensitive),
/// `=` whole word (alone: empty field), `==` whole field (alone: empty field), `*` zero or more
/// characters (alone: not empty), `@` one character, `#` one digit, `\` escape, `"…"` phrase from a
/// word start, `*"…"` phrase anywhere, `<` `<=` `>` `>=` (also `≤` `≥`), `a...b` range, `!`
/// duplicates, `?` invalid value, `//` today, `~` (relaxed: treated as plain).
struct FindEngine {
    /// Today's date, for `//`.
    var today: FMDate
    var dateformats: Int
    /// Compiled patterns, shared by the copies of one engine (one find request).
    private let cache = RegexCache()

    init(today: FMDate, dateformats: Int) {
        self.today = today
        self.dateformats = dateformats
    }

    final class RegexCache {
        var patterns: [String: NSRegularExpression] = [:]
        /// For `!`: how many records hold each (lower-cased) value, per table, field and repetition.
        var valueCounts: [String: [String: Int]] = [:]
    }

    /// How many records of `table` hold `key` (lower-cased text) in `field`'s repetition `repetition`
    /// (stored values, as FileMaker's `!` compares them). Counted once per find request and field, so
    /// `!` over n records is O(n), not O(n²).
    func duplicateCount(of key: String, table: TableState, field: EmulatorSchema.Field, repetition: Int) -> Int {
        let id = "\(table.schema.name.lowercased())\u{0}\(field.name.lowercased())\u{0}\(repetition)"
        if let counts = cache.valueCounts[id] { return counts[key] ?? 0 }
        var counts: [String: Int] = [:]
        for record in table.records.values {
            counts[record.value(field, repetition: repetition).text.lowercased(), default: 0] += 1
        }
        cache.valueCounts[id] = counts
        return counts[key] ?? 0
    }

    /// Whether `value` of a field of `type` matches `criterion`. `isDuplicate` answers `!`.
    func matches(_ criterion: String, _ value: FMValue, type: EmulatorSchema.FieldType, isDuplicate: () -> Bool) -> Bool {
        // Trimming goes through Foundation; skip it when neither end is a space (the usual case, per record).
        var c = FindEngine.endsWithSpace(criterion) ? criterion.trimmingCharacters(in: .whitespaces) : criterion
        if c.isEmpty { return true }
        if c.hasPrefix("~") { c = String(c.dropFirst()).trimmingCharacters(in: .whitespaces) }
        switch c {
        case "*": return !value.isEmpty
        case "=", "==": return value.isEmpty
        case "!": return !value.isEmpty && isDuplicate()
        case "?":
            if case .text = value, type != .text { return true }
            return false
        case "//":
            switch value {
            case let .date(d), let .timestamp(d, _): return d == today
            default: return false
            }
        default: break
        }
        if c.hasPrefix("==") {
            let rest = String(c.dropFirst(2))
            if !hasWildcard(rest), let typed = parseTyped(rest, type: type), type != .text {
                return !value.isEmpty && FMValue.compare(value, typed) == .orderedSame
            }
            return regexMatch(pattern(rest) , value.text, anchoredEnd: true)
        }
        let comparisons: [(String, (ComparisonResult) -> Bool)] = [
            (">=", { $0 != .orderedAscending }), ("≥", { $0 != .orderedAscending }),
            ("<=", { $0 != .orderedDescending }), ("≤", { $0 != .orderedDescending }),
            (">", { $0 == .orderedDescending }), ("<", { $0 == .orderedAscending }),
        ]
        for (op, test) in comparisons where c.hasPrefix(op) {
            let rest = String(c.dropFirst(op.count)).trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty, let bound = parseTyped(rest, type: type) else { return false }
            return test(FMValue.compare(value, bound))
        }
        if let range = rangeBounds(c) {
            guard !value.isEmpty, let lo = parseTyped(range.0, type: type), let hi = parseTyped(range.1, type: type) else { return false }
            return FMValue.compare(value, lo) != .orderedAscending && FMValue.compare(value, hi) != .orderedDescending
        }
        if c.hasPrefix("=") {
            let words = criterionWords(String(c.dropFirst()))
            let fieldWords = self.words(value.text)
            return !words.isEmpty && words.allSatisfy { w in fieldWords.contains { wordMatches(w, $0, anchoredEnd: true) } }
        }
        if c.hasPrefix("*\""), c.hasSuffix("\""), c.count >= 3 {
            let phrase = String(c.dropFirst(2).dropLast())
            return value.text.range(of: phrase, options: [.caseInsensitive, .diacriticInsensitive]) != nil
        }
        if c.hasPrefix("\""), c.hasSuffix("\""), c.count >= 2 {
            let phrase = String(c.dropFirst().dropLast())
            return phraseAtWordStart(phrase, in: value.text)
        }
        // Plain criterion. A date alone in a timestamp field means that whole day.
        if type == .timestamp, !hasWildcard(c),
           let day = FMValue.parseDate(c, dateformats: dateformats) ?? FMValue.parseDate(c, dateformats: dateformats == 2 ? 0 : 2) {
            if case let .timestamp(d, _) = value { return d == day }
            return false
        }
        if type != .text, !hasWildcard(c), let typed = parseTyped(c, type: type) {
            return !value.isEmpty && FMValue.compare(value, typed) == .orderedSame
        }
        if type == .date || type == .timestamp, let partial = partialDate(c) {
            switch value {
            case let .date(d), let .timestamp(d, _):
                return d.year == partial.year && (partial.month == nil || d.month == partial.month)
            default: return false
            }
        }
        if c.contains("\\"), !hasUnescapedWildcard(c) {
            // Escaped symbols: the literal text must start at a word start.
            var literal = ""
            var escaped = false
            for ch in c {
                if !escaped, ch == "\\" { escaped = true; continue }
                literal.append(ch)
                escaped = false
            }
            return phraseAtWordStart(literal, in: value.text)
        }
        let words = criterionWords(c)
        let fieldWords = self.words(value.text)
        // In number fields a wildcard pattern must cover the whole number (`##` finds 30, not 300).
        let anchored = type == .number
        return !words.isEmpty && words.allSatisfy { w in fieldWords.contains { wordMatches(w, $0, anchoredEnd: anchored) } }
    }

    /// Whether the first or the last character of `text` is in `CharacterSet.whitespaces`.
    static func endsWithSpace(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last else { return false }
        return CharacterSet.whitespaces.contains(first) || CharacterSet.whitespaces.contains(last)
    }

    func parseTyped(_ text: String, type: EmulatorSchema.FieldType) -> FMValue? {
        let t = text.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty else { return nil }
        switch type {
        case .text, .container: return .text(t)
        case .number: return FMNumber(t).map { .number($0) }
        case .date:
            return (FMValue.parseDate(t, dateformats: dateformats) ?? FMValue.parseDate(t, dateformats: dateformats == 2 ? 0 : 2)).map { .date($0) }
        case .time: return FMValue.parseTime(t).map { .time($0) }
        case .timestamp:
            if let ts = FMValue.parseTimestamp(t, dateformats: dateformats) ?? FMValue.parseTimestamp(t, dateformats: 2) {
                return .timestamp(ts.0, ts.1)
            }
            return nil
        }
    }

    func rangeBounds(_ c: String) -> (String, String)? {
        for sep in ["...", "…", ".."] {
            if let r = c.range(of: sep) {
                let lo = String(c[..<r.lowerBound]), hi = String(c[r.upperBound...])
                if !lo.isEmpty, !hi.isEmpty { return (lo, hi) }
            }
        }
        return nil
    }

    func partialDate(_ c: String) -> (year: Int, month: Int?)? {
        guard let parts = FMValue.dateParts(c) else { return nil }
        if parts.count == 1, parts[0].count == 4, let y = Int(parts[0]) { return (y, nil) }
        if parts.count == 2, parts[1].count == 4, let m = Int(parts[0]), let y = Int(parts[1]), (1...12).contains(m) { return (y, m) }
        return nil
    }

    func hasWildcard(_ s: String) -> Bool { s.contains { "*@#\\".contains($0) } }

    func hasUnescapedWildcard(_ s: String) -> Bool {
        var escaped = false
        for ch in s {
            if escaped { escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if "*@#".contains(ch) { return true }
        }
        return false
    }

    /// Words of field text: runs of letters and digits.
    func words(_ text: String) -> [String] {
        text.split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    /// Words of a criterion: like ``words(_:)`` but wildcards and escapes stay inside words.
    func criterionWords(_ text: String) -> [String] {
        var out: [String] = []
        var current = ""
        var escaped = false
        for ch in text {
            if escaped { current.append("\\"); current.append(ch); escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if ch.isLetter || ch.isNumber || "*@#".contains(ch) {
                current.append(ch)
            } else if !current.isEmpty {
                out.append(current)
                current = ""
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// A regular expression for a criterion with FileMaker wildcards.
    func pattern(_ criterion: String) -> String {
        var out = "^"
        var escaped = false
        for ch in criterion {
            if escaped { out += NSRegularExpression.escapedPattern(for: String(ch)); escaped = false; continue }
            switch ch {
            case "\\": escaped = true
            case "*": out += ".*"
            case "@": out += "."
            case "#": out += "[0-9]"
            default: out += NSRegularExpression.escapedPattern(for: String(ch))
            }
        }
        return out
    }

    func regexMatch(_ pattern: String, _ text: String, anchoredEnd: Bool) -> Bool {
        let full = anchoredEnd ? pattern + "$" : pattern
        let re: NSRegularExpression
        if let cached = cache.patterns[full] {
            re = cached
        } else {
            guard let compiled = try? NSRegularExpression(pattern: full, options: [.caseInsensitive, .dotMatchesLineSeparators]) else { return false }
            cache.patterns[full] = compiled
            re = compiled
        }
        let folded = text.folding(options: [.diacriticInsensitive], locale: nil)
        return re.firstMatch(in: folded, range: NSRange(folded.startIndex..., in: folded)) != nil
    }

    /// Case- and diacritic-insensitive comparison of one criterion word with one field word.
    func wordMatches(_ criterionWord: String, _ fieldWord: String, anchoredEnd: Bool) -> Bool {
        if hasWildcard(criterionWord) { return regexMatch(pattern(criterionWord), fieldWord, anchoredEnd: anchoredEnd) }
        let c = criterionWord.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        let f = fieldWord.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        return anchoredEnd ? f == c : f.hasPrefix(c)
    }

    func phraseAtWordStart(_ phrase: String, in text: String) -> Bool {
        var search = text.startIndex..<text.endIndex
        while let r = text.range(of: phrase, options: [.caseInsensitive, .diacriticInsensitive], range: search) {
            if r.lowerBound == text.startIndex { return true }
            let before = text[text.index(before: r.lowerBound)]
            if !(before.isLetter || before.isNumber) { return true }
            search = text.index(after: r.lowerBound)..<text.endIndex
        }
        return false
    }
}
