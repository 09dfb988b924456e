import Foundation
import Testing
@testable import SwiftFM

// FileMaker's answer envelope: an expired token, a FileMaker error under HTTP 500, a proxy's HTML (not JSON), numeric
// codes tolerated; a decoding error names the field, never the value.

@Suite("Envelope decoding")
struct EngineEnvelopeTests {
    func error(_ status: Int, _ text: String) -> FMError { Envelope.error(status: status, body: Data(text.utf8)) }

    @Test func expiredToken() {
        let e = error(401, Bodies.expired)
        #expect(e.code == "952")
        #expect(e.message == "Invalid FileMaker Data API token (*)")
        #expect(e.httpStatus == 401)
    }

    @Test func fileMakerErrorWithHTTP500() {
        let e = error(500, Bodies.noRecords)
        #expect(e == FMError(code: "401", message: "No records match the request", httpStatus: 500))
    }

    /// An answer decoded with `JSONDecoder` (not a typed record) that does not fit: the error names the field
    /// and what was expected, never the value. `JSONDecoder` on Apple platforms quotes an out-of-range number
    /// in its description ("Parsed JSON number <…> does not fit in Int."); this answer's decoder does the same.
    @Test func aDecodingErrorNamesTheFieldButNeverTheValue() {
        struct Answer: Decodable {
            struct Inner: Decodable {
                enum CodingKeys: String, CodingKey { case count }
                init(from decoder: any Decoder) throws {
                    let container = try decoder.container(keyedBy: CodingKeys.self)
                    let text = try container.decode(String.self, forKey: .count)
                    throw DecodingError.dataCorruptedError(forKey: .count, in: container,
                                                           debugDescription: "Parsed JSON number <\(text)> does not fit in Int.")
                }
            }
            var response: Inner
        }
        let endpoint = Endpoint<Int>(.get, .database, ["layouts", "L", "records"], auth: .session) { response in
            _ = try JSONDecoder().decode(Answer.self, from: response.body)
            return 0
        }
        let h = Harness { request in
            isLogin(request) ? .json(200, Bodies.login())
                : .json(200, #"{"response":{"count":"98765432109876543210987"},"messages":[{"code":"0","message":"OK"}]}"#)
        }
        let recorder = Recorder<Result<Int, FMError>>()
        h.api.perform(endpoint) { recorder.record($0) }
        let error = recorder.wait().first?.testError
        #expect(error?.code == FMError.ClientCode.malformedResponse)
        #expect(error?.httpStatus == 200)
        let message = error?.message ?? ""
        #expect(message.contains("field response.count"), "\(message)")
        #expect(!message.contains("98765"), "\(message)")
    }

    @Test func htmlFromAProxyIsNotJSON() {
        let e = error(502, "<html><body><h1>502 Bad Gateway</h1></body></html>")
        #expect(e.code == "-1006")
        #expect(e.httpStatus == 502)
        #expect(error(415, "").code == "-1006")
    }

    @Test(arguments: [
        #"{"messages":[{"code":"952","mess"#,          // truncated
        #"{"response":{}}"#,                            // no messages
        #"{"messages":[],"response":{}}"#,              // empty messages
        #"{"messages":"952","response":{}}"#,           // wrong type
        #"{"messages":[{"code":true}],"response":{}}"#, // wrong code type
        #"[1,2,3]"#,                                    // not an object
        #"  [{"#,                                       // truncated array
    ])
    func illShapedJSONIsMinus1007(text: String) {
        let e = error(500, text)
        #expect(e.code == "-1007")
        #expect(e.httpStatus == 500)
    }

    @Test func numericCodeIsTolerated() {
        #expect(error(500, #"{"messages":[{"code":105,"message":"Layout is missing"}]}"#).code == "105")
    }

    @Test func responseHelper() throws {
        let response = try Envelope.response(from: Data(Bodies.login("abc").utf8))
        #expect(response["token"] as? String == "abc")
        #expect(throws: FMError.notJSON(status: 200)) { try Envelope.response(from: Data("<html>".utf8)) }
        #expect { try Envelope.response(from: Data(#"{"messages":[{"code":"0"}]}"#.utf8)) } throws: { ($0 as? FMError)?.code == "-1007" }
        #expect { try Envelope.response(from: Data(#"{"response":{}}"#.utf8)) } throws: { ($0 as? FMError)?.code == "-1007" }
        #expect { try Envelope.response(from: Data(#"{"response":{},"messages":[{"code":"8"#.utf8)) } throws: { ($0 as? FMError)?.code == "-1007" }
        #expect { try Envelope.response(from: Data(#"{"response":{},"messages":[{"code":"401","message":"x"}]}"#.utf8)) } throws: { ($0 as? FMError)?.code == "401" }
    }
}
