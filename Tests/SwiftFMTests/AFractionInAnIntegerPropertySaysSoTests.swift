import Foundation
import Testing
@testable import SwiftFM

// The contract: a FileMaker number with a fraction (4.5, or "4.5" sent as text) read into an integer property
// (`Int`, `Int8`, `UInt`, …) fails with -1007 saying the number is not a whole number and what to declare instead
// (`Double` or `Decimal`), not that it "does not fit" (which reads as a range problem: 4.5 fits in an Int's range,
// and a newcomer's first typed model declares a rating as `Int`). A number beyond the type's range still says it
// does not fit. The value itself is never in the message (record data stays out of errors and logs).
@Suite("A fraction in an integer property says so")
struct AFractionInAnIntegerPropertySaysSoTests {
    struct Rated: Decodable { var rating: Int }
    struct Small: Decodable { var rating: Int8 }

    static func body(_ value: String) -> Data {
        Data(#"{"response":{"data":[{"fieldData":{"rating":\#(value)},"portalData":{},"recordId":"5","modId":"1"}]},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
    }

    static func failure<T: Decodable>(_ type: T.Type, _ value: String) -> FMError? {
        do {
            _ = try FMTypedFoundSet<T>(responseBody: body(value))
            return nil
        } catch let error as FMError {
            return error
        } catch {
            return nil
        }
    }

    @Test(arguments: ["4.5", #""4.5""#, "-0.25", #"" 12.75 ""#, "1e-3"])
    func aFractionSaysItIsNotAWholeNumber(value: String) throws {
        let error = try #require(Self.failure(Rated.self, value), "\(value) decoded into an Int")
        #expect(error.code == "-1007")
        #expect(error.message.contains("field rating: the number is not a whole number"), "\(error.message)")
        #expect(error.message.contains("declare the property Double or Decimal"), "\(error.message)")
        #expect(!error.message.contains("does not fit"), "\(error.message)")
        #expect(!error.message.contains("4.5") && !error.message.contains("12.75"), "the value is in the message: \(error.message)")
    }

    @Test(arguments: ["300", #""300""#, "1e30"])
    func aWholeNumberBeyondTheRangeStillDoesNotFit(value: String) throws {
        let error = try #require(Self.failure(Small.self, value), "\(value) decoded into an Int8")
        #expect(error.code == "-1007")
        #expect(error.message.contains("field rating: the number does not fit in Int8"), "\(error.message)")
    }

    @Test func aWholeNumberWrittenWithAFractionStillReads() throws {
        let set = try FMTypedFoundSet<Rated>(responseBody: Self.body("4.0"))
        #expect(set.records[0].fieldData.rating == 4)
    }
}
