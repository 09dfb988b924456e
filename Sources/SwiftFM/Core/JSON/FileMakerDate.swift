import Foundation

/// Reads FileMaker's date, time and timestamp text (every `dateformats`) without `DateFormatter`.
enum FileMakerDate {
    /// The instant `text` names in `timeZone`, or `nil` when it is not a FileMaker date, time or timestamp.
    static func parse(_ text: String, timeZone: TimeZone) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: UnsafeRawBufferPointer($0), timeZone: timeZone) }
    }

    /// The instant the UTF-8 `bytes` name in `timeZone` (``parse(_:timeZone:)`` without making a `String`).
    static func parse(bytes: UnsafeRawBufferPointer, timeZone: TimeZone) -> Date? {
        var scanner = Scanner(bytes)
        scanner.skipSpaces()
        var days = 0 // days since 1970-01-01
        var seconds = 0.0
        var hasDate = false
        let start = scanner.index
        if let first = scanner.digits(), scanner.peekSeparator() {
            // A date: yyyy-MM-dd (ISO, format 2), or MM/dd/yyyy (US: formats 0, 1 and the default).
            let separator = scanner.next()
            guard let second = scanner.digits(), scanner.next() == separator, let third = scanner.digits() else { return nil }
            let (year, month, day) = first.count == 4 ? (first.value, second.value, third.value) : (third.value, first.value, second.value)
            guard (first.count == 4 || third.count == 4 || third.count <= 2), (1...12).contains(month),
                  (1...daysIn(month: month, year: year)).contains(day) else { return nil }
            days = daysFromCivil(year: year, month: month, day: day)
            hasDate = true
            if scanner.atEnd || scanner.onlySpacesLeft { return instant(days: days, seconds: 0, timeZone) }
            guard let gap = scanner.next(), gap == UInt8(ascii: " ") || gap == UInt8(ascii: "T") else { return nil }
            scanner.skipSpaces()
        } else {
            scanner.index = start
        }
        guard let time = scanner.time() else { return nil }
        seconds = time
        // An ISO 8601 zone after a date and a time (FileMaker's OData service: `…Z`, or `…+02:00` with
        // `fmodata.gmtoffset`) names the instant itself; the Data API never sends one.
        if hasDate, let offset = scanner.zone() {
            guard scanner.atEnd || scanner.onlySpacesLeft else { return nil }
            return Date(timeIntervalSince1970: Double(days) * 86_400 + seconds - Double(offset))
        }
        scanner.skipSpaces()
        guard scanner.atEnd else { return nil }
        if !hasDate { days = 0 }
        return instant(days: days, seconds: seconds, timeZone)
    }

    private static func instant(days: Int, seconds: Double, _ timeZone: TimeZone) -> Date {
        let local = Double(days) * 86_400 + seconds
        if timeZone.secondsFromGMT() == 0, timeZone.identifier == "GMT" || timeZone.identifier == "UTC" || timeZone.identifier.hasPrefix("GMT") {
            return Date(timeIntervalSince1970: local)
        }
        // The offset in force at that local time (found from the offset at the UTC reading, then corrected).
        let guess = Date(timeIntervalSince1970: local - Double(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: local))))
        return Date(timeIntervalSince1970: local - Double(timeZone.secondsFromGMT(for: guess)))
    }

    static func isLeap(_ year: Int) -> Bool { (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { index >= bytes.count }
        var onlySpacesLeft: Bool { bytes[index...].allSatisfy { $0 == UInt8(ascii: " ") } }

        mutating func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") { index += 1 }
        }

        /// A date separator: `/`, `-` or `.` (FileMaker accepts any non-letter other than `:` and `+`).
        func peekSeparator() -> Bool {
            guard index < bytes.count else { return false }
            return bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: ".")
        }

        mutating func digits(max: Int = 9) -> (value: Int, count: Int)? {
            var value = 0
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39, count < max {
                value = value * 10 + Int(bytes[index] - 0x30)
                count += 1
                index += 1
            }
            return count == 0 ? nil : (value, count)
        }

        /// An ISO 8601 zone designator, `Z` or `±HH[:MM]`, as seconds east of UTC; `nil` (nothing read) when
        /// there is none.
        mutating func zone() -> Int? {
            guard index < bytes.count else { return nil }
            let save = index
            if bytes[index] == UInt8(ascii: "Z") {
                index += 1
                return 0
            }
            guard bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") else { return nil }
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = digits(max: 2), hours.count == 2, hours.value <= 14 else {
                index = save
                return nil
            }
            var minutes = 0
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") { index += 1 }
            if let parsed = digits(max: 2) {
                guard parsed.count == 2, parsed.value < 60 else {
                    index = save
                    return nil
                }
                minutes = parsed.value
            }
            return sign * (hours.value * 3600 + minutes * 60)
        }

        /// `H:mm[:ss[.fff]]`, optionally followed by `AM`/`PM`; hours may exceed 24 (a duration).
        mutating func time() -> Double? {
            guard let hours = digits(), next() == UInt8(ascii: ":"), let minutes = digits(max: 2), minutes.value < 60 else { return nil }
            var seconds = 0.0
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                index += 1
                guard let whole = digits(max: 2), whole.value < 60 else { return nil }
                seconds = Double(whole.value)
                if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                    index += 1
                    var scale = 0.1
                    guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
                    while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                        seconds += Double(bytes[index] - 0x30) * scale
                        scale /= 10
                        index += 1
                    }
                }
            }
            var hour = hours.value
            let save = index
            skipSpaces()
            if index + 1 < bytes.count, bytes[index + 1] | 0x20 == UInt8(ascii: "m"),
               bytes[index] | 0x20 == UInt8(ascii: "a") || bytes[index] | 0x20 == UInt8(ascii: "p") {
                guard (1...12).contains(hour) else { return nil }
                let pm = bytes[index] | 0x20 == UInt8(ascii: "p")
                hour = hour % 12 + (pm ? 12 : 0)
                index += 2
            } else {
                index = save
            }
            return Double(hour * 3600 + minutes.value * 60) + seconds
        }
    }
}
