import Foundation
import Testing
@testable import SwiftFMEmulator

/// An OData `PATCH` or `DELETE` by `$filter` (checked under the state lock, matched on a snapshot outside it, written
/// under it again) keeps the contract of a write that filters and writes in one step:
/// - it leaves nothing behind that no record holds (a container's bytes sent to no record are dropped, on the fast path
///   and when it is answered again under the lock);
/// - it notes its changes once, with the records it wrote, whichever path wrote them (one webhook operation per kind
///   of change, the rows as written), and the request log holds one entry with the status the client got;
/// - ``EmulatorState/dataVersion`` moves on every change a match could see (either API's writes, a reset) and never on
///   a read (which would make the write match again under the lock).
@Suite struct ODataWriteByFilterAttackTests {
    /// A 1×1 PNG's first bytes, base64: a container body.
    static let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"

    /// Sends `write`; the first time a `$filter` starts matching meanwhile, runs `meanwhile` on another thread and waits
    /// for it (bounded): whether it ran while the write matched, and the write's answer.
    func whileMatching(_ c: ODataClient, _ write: () -> Answer, meanwhile: @escaping @Sendable () -> Void) -> (answer: Answer, ran: Bool) {
        let armed = Locked(true)
        let ran = Locked(false)
        c.emulator.core.state.withLock {
            $0.odataWillFilter = {
                guard armed.withLock({ let was = $0; $0 = false; return was }) else { return }
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    meanwhile()
                    done.signal()
                }
                guard done.wait(timeout: .now() + 30) == .success else { return }
                ran.withLock { $0 = true }
            }
        }
        defer { c.emulator.core.state.withLock { $0.odataWillFilter = nil } }
        let answer = write()
        return (answer, ran.withLock { $0 })
    }

    /// `method path` with `body` as another client sends it (the Shop's credentials).
    static func request(_ method: String, _ path: String, body: String? = nil) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Host", "127.0.0.1:3000"), ("Authorization", "Basic " + Data("admin:admin".utf8).base64EncodedString())]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method: method, target: "/fmi/odata/v4/Shop" + path, headers: headers, body: Data((body ?? "").utf8))
    }

    func blobCount(_ c: ODataClient) -> Int { c.emulator.core.state.withLock { $0.blobs.count } }
    func version(_ c: ODataClient) -> Int { c.emulator.core.state.withLock { $0.dataVersion } }

    // MARK: Nothing left behind

    /// A container sent by a write by `$filter` that writes no record (nothing matches, or its match went meanwhile and
    /// it is answered again under the lock) is not kept: before, its bytes stayed until the emulator stopped, one copy
    /// per request.
    @Test(arguments: [false, true])
    func aContainerWrittenToNoRecordIsNotKept(matchGoesMeanwhile: Bool) throws {
        let c = try ODataClient()
        let handler = c.emulator.handler
        let before = blobCount(c)
        let body = #"{"photo":"\#(Self.png)"}"#
        let answer: Answer
        if matchGoesMeanwhile {
            let deleted = Locked<Int?>(nil)
            let (a, ran) = whileMatching(c, { c.send("PATCH", "/Shop/Customers?$filter=code%20eq%20'NUL'", body: body) }) {
                let r = handler.handle(Self.request("DELETE", "/Customers('NUL')"))
                deleted.withLock { $0 = r.status }
            }
            #expect(ran, "the delete did not run while the write matched")
            #expect(deleted.withLock { $0 } == 204)
            answer = a
        } else {
            answer = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Nowhere'", body: body)
        }
        #expect(answer.status == 204 && answer.header("fmodata.affected_rows") == "0", "\(answer.text)")
        #expect(blobCount(c) == before, "the container's bytes were kept with no record holding them")
        // A write that does reach records keeps one copy, held by them.
        let written = c.send("PATCH", "/Shop/Customers?$filter=city%20eq%20'Berlin'", body: body)
        #expect(written.status == 204 && written.header("fmodata.affected_rows") == (matchGoesMeanwhile ? "1" : "2"), "\(written.text)")
        #expect(blobCount(c) == before + 1)
        #expect(c.send("GET", "/Shop/Customers('ALFKI')/photo/$value").body.count > 0)
    }
}
