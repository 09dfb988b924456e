import Foundation
import Testing
@testable import SwiftFMEmulator

/// Contract: the emulator's request line (`Emulator.onRequest`, what `fm-emulator --verbose` writes to stderr) is one
/// line whatever a client put in the path: a percent-encoded line break, escape sequence (ANSI colours) or bidirectional
/// control in a segment is shown as U+FFFD, so that a client cannot forge a line of the emulator's log; a token in the
/// path stays `<token>`.
@Suite struct ARequestLineIsOneLineWhateverItsPathTests {
    /// Failed before: the decoded `%0D%0A` broke the line, and the forged text started a line of its own.
    @Test func aHostilePathIsShownOnOneLine() throws {
        let h = try Harness()
        let token = try h.login()
        let lines = LockedLines()
        h.emulator.onRequest = { lines.append($0) }
        let hostile = "Con%0D%0A2026-01-01%20POST%20/forged%20%E2%86%92%20200%1B%5B31m%E2%80%AE%E2%80%A8x"
        h.send("GET", "\(h.base)/layouts/\(hostile)/records")
        h.send("DELETE", "\(h.base)/sessions/\(token)")
        let logged = lines.all
        #expect(logged.count == 2, "\(logged)")
        for line in logged {
            #expect(!line.unicodeScalars.contains {
                $0.properties.generalCategory == .control || $0.properties.isBidiControl
                    || $0.properties.generalCategory == .lineSeparator || $0.properties.generalCategory == .paragraphSeparator
            }, "\(line.debugDescription)")
            #expect(!line.contains(token), "\(line)")
        }
        #expect(logged.first?.contains("/forged") == true, "the path is still shown: \(logged)")
        #expect(logged.last?.contains("/sessions/<token>") == true, "\(logged)")
    }
}
