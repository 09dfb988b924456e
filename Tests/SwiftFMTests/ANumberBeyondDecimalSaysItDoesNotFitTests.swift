import Foundation
import Testing
@testable import SwiftFM

// The contract: a FileMaker number that a `Decimal` cannot hold (FileMaker keeps numbers up to 400 digits; a `Decimal`
// holds 38 digits with an exponent from -128 to 127) read into a `Decimal` property fails with -1007 saying that the
// number does not fit in Decimal, whether it came as a JSON number or as text, in a typed read or a raw found set
// decoded typed. It never says that a number was found where a Decimal was expected (a type mismatch, which reads as
// a model declared with the wrong type). A number within the range still reads.
@Suite("A number beyond Decimal says it does not fit")
struct ANumberBeyondDecimalSaysItDoesNotFitTests {
    struct Priced: Decodable { var amount: Decimal }

    static func body(_ value: String) -> Data {
        Data(#"{"response":{"data":[{"fieldData":{"amount":\#(value)},"portalData":{},"recordId":"5","modId":"1"}]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    /// The error of reading `value` into `Priced`, typed straight from the answer and through a raw found set.
    static func failures(_ value: String) -> [FMError?] {
        func error(_ read: () throws -> Void) -> FMError? {
            do { try read(); return nil } catch { return error as? FMError }
        }
        return [
            error { _ = try FMTypedFoundSet<Priced>(responseBody: body(value)) },
            error { _ = try FMFoundSet(responseBody: body(value)).decode(Priced.self) },
        ]
    }

    /// Before the fix: a JSON number out of range said `typeMismatch … found a number` (text already said it did not fit).
    @Test(arguments: ["1e200", "-1e200", "1e-200", String(repeating: "9", count: 200), "0." + String(repeating: "0", count: 180) + "1",
                      #""1e200""#, #""1e-200""#])
    func aNumberOutOfRangeDoesNotFit(value: String) throws {
        for (path, failure) in zip(["typed", "raw"], Self.failures(value)) {
            let error = try #require(failure, "\(path): \(value.prefix(20)) decoded into a Decimal")
            #expect(error.code == FMError.ClientCode.malformedResponse, "\(path)")
            #expect(error.message.contains("field amount: the number does not fit in Decimal"), "\(path): \(error.message)")
            #expect(!error.message.contains("found a number"), "\(path): \(error.message)")
        }
    }

    /// Guard: numbers a Decimal holds read, as numbers and as text.
    @Test(arguments: ["12.345", "1e100", "-1e-100", #""12.345""#, "123456789012345678901234567890"])
    func aNumberInRangeReads(value: String) throws {
        let typed = try FMTypedFoundSet<Priced>(responseBody: Self.body(value))
        let raw = try FMFoundSet(responseBody: Self.body(value)).decode(Priced.self)
        let text = value.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        #expect(typed.records[0].fieldData.amount == Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")))
        #expect(raw[0].fieldData.amount == typed.records[0].fieldData.amount)
    }
}
