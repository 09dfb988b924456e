import Foundation
import Testing
@testable import SwiftFM

// An OData query or filter the builder writes means what its parts say, whatever the values hold: literals
// escaped, names quoted, the query string encoded as FileMaker reads it.

/// A small OData `$filter` tokenizer on the test side: strings (`''` inside), quoted names, words, numbers
/// and ISO literals, operators and punctuation. A filter the builder wrote must tokenize into exactly the
/// tokens its parts stand for, whatever the values hold.
enum FilterToken: Equatable, CustomStringConvertible {
    case string(String)
    case name(String)        // a bare word: a name, an operator, a function, null
    case quotedName(String)
    case literal(String)     // a number, date, time or timestamp
    case open, close, comma

    var description: String {
        switch self {
        case .string(let text): return "string(\(text))"
        case .name(let text): return "name(\(text))"
        case .quotedName(let text): return "quoted(\(text))"
        case .literal(let text): return "literal(\(text))"
        case .open: return "("
        case .close: return ")"
        case .comma: return ","
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    static func tokenize(_ text: String) throws -> [FilterToken] {
        let chars = Array(text)
        var tokens: [FilterToken] = []
        var index = 0
        while index < chars.count {
            let char = chars[index]
            switch char {
            case " ": index += 1
            case "(": tokens.append(.open); index += 1
            case ")": tokens.append(.close); index += 1
            case ",": tokens.append(.comma); index += 1
            case "'":
                var value = ""
                index += 1
                while true {
                    guard index < chars.count else { throw Failure(description: "unterminated string in \(text)") }
                    if chars[index] == "'" {
                        if index + 1 < chars.count, chars[index + 1] == "'" { value.append("'"); index += 2; continue }
                        index += 1
                        break
                    }
                    value.append(chars[index])
                    index += 1
                }
                tokens.append(.string(value))
                // A string must be followed by a separator: never glued to another token.
                if index < chars.count, ![" ", ")", ","].contains(chars[index]) {
                    throw Failure(description: "string glued to \(chars[index]) in \(text)")
                }
            case "\"":
                var value = ""
                index += 1
                while index < chars.count, chars[index] != "\"" { value.append(chars[index]); index += 1 }
                guard index < chars.count else { throw Failure(description: "unterminated name in \(text)") }
                index += 1
                tokens.append(.quotedName(value))
            default:
                var value = ""
                while index < chars.count, !" (),'\"".contains(chars[index]) { value.append(chars[index]); index += 1 }
                guard !value.isEmpty else { throw Failure(description: "unexpected \(char) in \(text)") }
                if let first = value.first, first.isNumber || first == "-" {
                    tokens.append(.literal(value))
                } else {
                    tokens.append(.name(value))
                }
            }
        }
        return tokens
    }
}

/// Decodes a percent-encoded query value as a server would (`%XX`; `+` stays `+`).
func percentDecoded(_ text: String) -> String? { text.removingPercentEncoding }

@Suite("OData query and filter")
struct ODataQueryTests {
    static let hostile = [
        "O'Brien", "''", "'", "x' or 1 eq 1 or name eq 'y", "a'); $top=1&$filter=(true", "Zoë ünïcødé 日本語 🎸",
        "tab\tnew\nline", "100% & more + less # hash ? query = eq", "\"quoted\"", "back\\slash", ")(,;", "",
    ]

    @Test("a string literal stays one string token, whatever it holds")
    func hostileLiterals() throws {
        for value in Self.hostile {
            let filter = FMODataFilter.eq("name", .string(value))
            let text = try filter.expression().get()
            #expect(try FilterToken.tokenize(text) == [.name("name"), .name("eq"), .string(value)], "\(value.debugDescription) → \(text)")
            // And through the URL: the encoded query decodes back to exactly one $filter option with that text.
            let query = try FMODataQuery(filter: filter).queryString().get()
            #expect(!query.contains(" ") && !query.contains("+") && !query.contains("#"), "\(query)")
            let options = query.split(separator: "&", omittingEmptySubsequences: false)
            #expect(options.count == 1, "\(query)")
            #expect(options.first?.hasPrefix("$filter=") == true)
            let decoded = options.first.flatMap { percentDecoded(String($0.dropFirst("$filter=".count))) }
            #expect(decoded == text, "\(query)")
        }
    }

    @Test("functions, and/or/not keep every literal in place")
    func composite() throws {
        let filter: FMODataFilter = .eq("last name", "O'Brien") && (.gt("age", 30) || .startsWith("city", "San' or '1")) && !.contains("note", "x")
        let text = try filter.expression().get()
        #expect(text == #""last name" eq 'O''Brien' and (age gt 30 or startswith(city,'San'' or ''1')) and not (contains(note,'x'))"#)
        let tokens = try FilterToken.tokenize(text)
        #expect(tokens == [
            .quotedName("last name"), .name("eq"), .string("O'Brien"), .name("and"),
            .open, .name("age"), .name("gt"), .literal("30"), .name("or"),
            .name("startswith"), .open, .name("city"), .comma, .string("San' or '1"), .close, .close,
            .name("and"), .name("not"), .open, .name("contains"), .open, .name("note"), .comma, .string("x"), .close, .close,
        ])
    }

    @Test("names: plain as they are, others quoted, unsafe ones refused")
    func names() throws {
        #expect(try ODataText.name("city") == "city")
        #expect(try ODataText.name("Zip Code") == "\"Zip Code\"")
        #expect(try ODataText.name("__pk_id") == "\"__pk_id\"")
        #expect(try ODataText.name("id") == "\"id\"")          // -1002 on FileMaker when bare
        #expect(try ODataText.name("and") == "\"and\"")
        #expect(try ODataText.name("café") == "\"café\"")
        #expect(try ODataText.name("FMFID:4296032403") == "FMFID:4296032403")
        #expect(try ODataText.name("ROWID") == "ROWID")
        for bad in ["", "a\"b", "new\nline"] {
            #expect(throws: FMError.self) { try ODataText.name(bad) }
        }
        // An unsafe name fails the filter (and the call, with -1002), never reaching the wire.
        let failed = FMODataFilter.eq("x\" eq 1 or \"y", 1).expression()
        #expect(failed.code == FMError.ClientCode.invalidArgument)
    }

    @Test("numbers, booleans, null, dates, times, timestamps")
    func literals() throws {
        #expect(FMODataValue.int(-42).description == "-42")
        #expect(FMODataValue.double(3.25).description == "3.25")
        #expect(FMODataValue.double(1e-5).description == "0.00001")
        #expect(FMODataValue.double(2).description == "2")
        #expect(FMODataValue.decimal(Decimal(string: "12345678901234567890.5")!).description == "12345678901234567890.5")
        #expect(FMODataValue.double(.nan).literal().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataValue.double(.infinity).literal().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataValue.bool(true).description == "1")
        #expect(FMODataValue.null.description == "null")
        #expect(FMODataValue.date(year: 2024, month: 1, day: 2).description == "2024-01-02")
        #expect(FMODataValue.date(year: 2024, month: 13, day: 2).literal().code == FMError.ClientCode.invalidArgument)
        #expect(FMODataValue.time(hour: 9, minute: 5, second: 0).description == "09:05:00")
        #expect(FMODataValue.timestamp(Date(timeIntervalSince1970: 1_704_203_100)).description == "2024-01-02T13:45:00Z")
        #expect(FMODataValue.timestamp(Date(timeIntervalSince1970: 1_704_203_100.25)).description == "2024-01-02T13:45:00.250Z")
        let zone = TimeZone(secondsFromGMT: -8 * 3600)!
        #expect(FMODataValue.date(Date(timeIntervalSince1970: 1_704_164_400), in: zone).description == "2024-01-01")
        let text = try (FMODataFilter.ge("born", .date(year: 1980, month: 5, day: 1)) && .isNull("died")
                        && .lt("lastSeen", .timestamp(Date(timeIntervalSince1970: 0))) && .eq("active", true)).expression().get()
        #expect(try FilterToken.tokenize(text) == [
            .name("born"), .name("ge"), .literal("1980-05-01"), .name("and"), .name("died"), .name("eq"), .name("null"),
            .name("and"), .name("lastSeen"), .name("lt"), .literal("1970-01-01T00:00:00Z"), .name("and"),
            .name("active"), .name("eq"), .literal("1"),
        ])
    }

    @Test("raw filters are sent as written, parenthesised when combined")
    func raw() throws {
        let text = try (FMODataFilter.raw("year(born) eq 1980 or x eq 1") && .eq("a", 1)).expression().get()
        #expect(text == "(year(born) eq 1980 or x eq 1) and a eq 1")
        #expect(try FMODataFilter.and([]).expression().get() == "1 eq 1")
        #expect(try FMODataFilter.or([.eq("a", 1)]).expression().get() == "a eq 1")
    }

    @Test("the query string: order, %20 for spaces, , $ ( ) = ; left unencoded")
    func queryString() throws {
        let query = FMODataQuery(
            filter: .eq("Zip Code", "a b&c+d"), select: ["Name", "Zip Code"], orderBy: [.descending("Name"), .ascending("id")],
            top: 5, skip: 10, count: true,
            expand: [FMODataExpand("Orders", query: FMODataQuery(select: ["id", "total"], top: 3, count: true))])
        let text = try query.queryString().get()
        #expect(text == "$select=Name,%22Zip%20Code%22&$filter=%22Zip%20Code%22%20eq%20'a%20b%26c%2Bd'"
                + "&$expand=Orders($select=%22id%22,total;$top=3)&$orderby=Name%20desc,%22id%22&$top=5&$skip=10&$count=true")
        #expect(FMODataQuery(top: -1).queryString().code == FMError.ClientCode.invalidArgument)
        #expect(try FMODataQuery().queryString().get() == "")
    }

    @Test("keys: numbers bare, strings quoted, ROWID, composite; encoded as path")
    func keys() throws {
        #expect(FMODataKey(integerLiteral: 42).description == "(42)")
        #expect(FMODataKey.string("O'Brien").description == "('O''Brien')")
        #expect(FMODataKey.rowID(7).description == "(ROWID=7)")
        #expect(FMODataKey.number(Decimal(string: "1.5")!).description == "(1.5)")
        #expect(FMODataKey.composite([3276, "211E", .string("a'b")]).description == "(3276,'211E','a''b')")
        #expect(try FMODataKey.string("a b/c?d#é").encoded().get() == "('a%20b%2Fc%3Fd%23%C3%A9')")
        #expect(FMODataKey.composite([]).encoded().code == FMError.ClientCode.invalidArgument)
        // A hostile key stays one string inside the parentheses.
        for value in Self.hostile {
            let decoded = try #require(percentDecoded(try FMODataKey.string(value).encoded().get()))
            #expect(decoded.first == "(" && decoded.last == ")")
            #expect(try FilterToken.tokenize(String(decoded.dropFirst().dropLast())) == [.string(value)])
        }
    }
}
