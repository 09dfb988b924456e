import Foundation
import Testing
@testable import SwiftFMEmulator

/// A `$batch` runs its parts one by one, each under the state lock on its own, with other clients answered between
/// them: a write part is stamped (auto-entered creation and modification timestamps) with the emulator's time when
/// that part runs, not when the batch arrived; a change set's parts, run under one hold of the lock, share one time.
/// Before, every part was stamped with the batch's arrival time, however long before it ran.
@Suite struct ODataBatchClockTests {
    static let schema = #"""
    {
      "database": "Shop",
      "accounts": [ { "username": "admin", "password": "admin" } ],
      "tables": {
        "Notes": {
          "fields": {
            "id": { "type": "number", "autoEnter": "serial" },
            "text": "text",
            "made": { "type": "timestamp", "autoEnter": "creationTimestamp" },
            "changed": { "type": "timestamp", "autoEnter": "modificationTimestamp" }
          }
        }
      },
      "layouts": { "Notes": { "table": "Notes", "fields": ["id", "text", "made", "changed"] } },
      "records": { "Notes": [ { "text": "one" }, { "text": "two" } ] }
    }
    """#

    static let day: TimeInterval = 86_400

    /// Sends `body` as a `$batch` (boundary `b1`, LF lines made CRLF); the first time a part filters records (a read's
    /// `$filter`, after the lock is released: ``EmulatorState/odataWillFilter``), the emulator's clock moves `by`
    /// seconds, from another thread (bounded: were the filtering under the lock, the clock would move only after the
    /// batch). Returns the answer and whether the clock moved meanwhile.
    func batch(_ c: ODataClient, _ body: String, movingClockBy seconds: TimeInterval) -> (Answer, moved: Bool) {
        let emulator = c.emulator
        let armed = Locked(true)
        let moved = Locked(false)
        emulator.core.state.withLock {
            $0.odataWillFilter = {
                guard armed.withLock({ let was = $0; $0 = false; return was }) else { return }
                let done = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    emulator.advanceClock(by: seconds)
                    done.signal()
                }
                moved.withLock { $0 = done.wait(timeout: .now() + 300) == .success }
            }
        }
        defer { emulator.core.state.withLock { $0.odataWillFilter = nil } }
        let answer = c.send("POST", "/Shop/$batch", body: body.replacingOccurrences(of: "\n", with: "\r\n"),
                            contentType: "multipart/mixed; boundary=b1")
        return (answer, moved.withLock { $0 })
    }

    /// The note's `made` and `changed` stamps.
    func stamps(_ c: ODataClient, _ id: Int) throws -> (made: Date, changed: Date) {
        let row = c.send("GET", "/Shop/Notes(\(id))")
        let formatter = ISO8601DateFormatter()
        let made = try #require(row.json?["made"]?.stringValue.flatMap(formatter.date(from:)), "\(row.text)")
        let changed = try #require(row.json?["changed"]?.stringValue.flatMap(formatter.date(from:)), "\(row.text)")
        return (made, changed)
    }

    @Test func aWritePartIsStampedWhenItRuns() throws {
        let c = try ODataClient(schemaJSON: Self.schema)
        let body = """
        --b1
        Content-Type: application/http

        PATCH Notes(1) HTTP/1.1
        Content-Type: application/json

        {"text":"first"}
        --b1
        Content-Type: application/http

        GET Notes?$filter=text%20eq%20'first' HTTP/1.1

        --b1
        Content-Type: application/http

        PATCH Notes(2) HTTP/1.1
        Content-Type: application/json

        {"text":"second"}
        --b1
        Content-Type: application/http

        POST Notes HTTP/1.1
        Content-Type: application/json

        {"text":"third"}
        --b1--
        """
        let (answer, moved) = batch(c, body, movingClockBy: 10 * Self.day)
        #expect(answer.status == 200)
        #expect(moved, "the clock did not move while the batch's read filtered")
        #expect(!answer.text.contains("HTTP/1.1 4"), "\(answer.text)")
        let first = try stamps(c, 1), second = try stamps(c, 2), third = try stamps(c, 3)
        // The first part ran before the clock moved, the others after: ten days later.
        #expect(second.changed.timeIntervalSince(first.changed) >= 10 * Self.day - 1, "\(first.changed) → \(second.changed)")
        #expect(third.made.timeIntervalSince(first.changed) >= 10 * Self.day - 1, "\(first.changed) → \(third.made)")
        #expect(third.changed == third.made)
    }

    @Test func aChangeSetsPartsShareTheTimeItRuns() throws {
        let c = try ODataClient(schemaJSON: Self.schema)
        let arrival = c.emulator.now
        let body = """
        --b1
        Content-Type: application/http

        GET Notes?$filter=text%20eq%20'one' HTTP/1.1

        --b1
        Content-Type: multipart/mixed; boundary=cs1

        --cs1
        Content-Type: application/http
        Content-ID: 1

        PATCH Notes(1) HTTP/1.1
        Content-Type: application/json

        {"text":"uno"}
        --cs1
        Content-Type: application/http
        Content-ID: 2

        POST Notes HTTP/1.1
        Content-Type: application/json

        {"text":"tres"}
        --cs1--
        --b1--
        """
        let (answer, moved) = batch(c, body, movingClockBy: 3 * Self.day)
        #expect(answer.status == 200)
        #expect(moved, "the clock did not move while the batch's read filtered")
        #expect(!answer.text.contains("HTTP/1.1 4"), "\(answer.text)")
        let changed = try stamps(c, 1), made = try stamps(c, 3)
        // The change set ran after the clock moved: three days after the batch came; its parts at one time.
        #expect(changed.changed.timeIntervalSince(arrival) >= 3 * Self.day - 1, "\(arrival) → \(changed.changed)")
        #expect(made.made == changed.changed)
        #expect(made.changed == changed.changed)
    }
}
