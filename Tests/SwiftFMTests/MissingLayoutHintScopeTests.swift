// Contract: the missing-layout hint is the Data API's: an OData answer with FileMaker's code 105 keeps the server's
// words alone (OData names tables, not layouts), whatever the entity set is called ("layouts" included), whatever the
// HTTP status.
import Foundation
import Testing
@testable import SwiftFM

@Suite struct MissingLayoutHintScopeTests {
    static let missing = #"{"error":{"code":"105","message":"Layout is missing"}}"#

    @Test(arguments: [400, 404, 500])
    func anODataAnswerWith105IsNotHinted(status: Int) async {
        let h = ODataHarness(retry: .none) { _ in .json(status, Self.missing) }
        for call in 0..<2 {
            do {
                if call == 0 { _ = try await h.odata.records(from: "layouts") } else { _ = try await h.odata.count(of: "layouts") }
                Issue.record("expected 105")
            } catch let error as FMError {
                #expect(error.code == "105")
                #expect(!error.message.contains("no layout"), "\(error.message)")
                #expect(!error.message.contains("layouts()"), "\(error.message)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
