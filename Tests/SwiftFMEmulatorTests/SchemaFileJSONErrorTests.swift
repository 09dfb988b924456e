// Contract: a schema file that is not JSON is reported where a person looks: the line and column of the
// error (not only a byte offset), and, when the error is a comment (`//` or `/*`, as in the annotated example
// of Docs/SCHEMA.md), that a schema file is plain JSON and notes go in a "comment" key. The position is the one an
// editor shows: a byte-order mark (which an editor does not show) takes no column; CRLF line ends count as one line
// end; an error at the very start or the very end, or in a file that is not UTF-8, is still placed.
import Foundation
import Testing
@testable import SwiftFMEmulator

@Suite struct SchemaFileJSONErrorTests {
    static func message(_ text: String) -> String {
        do {
            _ = try EmulatorSchema(jsonData: Data(text.utf8))
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    @Test func aLineCommentSaysSchemaFilesArePlainJSON() {
        let message = Self.message("{\n  \"database\": \"Music\",   // served at /fmi/data/{v}/databases/Music\n  \"tables\": {}\n}\n")
        #expect(message.contains("line 2, column 26"), "\(message)")
        #expect(message.contains("comment"), "\(message)")
        #expect(message.contains("plain JSON"), "\(message)")
    }

    @Test func aBlockCommentSaysSoToo() {
        let message = Self.message("/* my schema */ {\"database\": \"X\", \"tables\": {}}")
        #expect(message.contains("line 1, column 1") && message.contains("plain JSON"), "\(message)")
    }

    @Test func anotherErrorNamesItsLineAndColumnWithoutTheCommentNote() {
        let message = Self.message("{\n  \"database\": \"X\",\n  \"tables\": {,}\n}")
        #expect(message.contains("line 3, column 14"), "\(message)")
        #expect(!message.contains("plain JSON"), "\(message)")
    }

    /// The annotated example of Docs/SCHEMA.md, as a reader copies it, is refused with the note.
    @Test func theAnnotatedExampleOfTheSchemaContractIsRefusedWithTheNote() throws {
        let doc = try String(contentsOf: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/SCHEMA.md"), encoding: .utf8)
        let start = try #require(doc.range(of: "```jsonc\n"))
        let end = try #require(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
        let message = Self.message(String(doc[start.upperBound..<end.lowerBound]))
        #expect(message.contains("plain JSON"), "\(message)")
    }

    /// A file saved with a UTF-8 byte-order mark: the mark is no column (an editor shows none).
    @Test func aByteOrderMarkTakesNoColumn() {
        let message = Self.message("\u{FEFF}// notes\n{\"database\": \"X\", \"tables\": {}}")
        #expect(message.contains("line 1, column 1 "), "\(message)")
        #expect(message.contains("plain JSON"), "\(message)")
    }

    @Test func crlfLineEndsCountOneLineEach() {
        let message = Self.message("{\r\n  \"database\": \"X\",\r\n  \"tables\": {,}\r\n}")
        #expect(message.contains("line 3, column 14"), "\(message)")
    }

    @Test func anErrorAtTheEndOfTheFileIsPlaced() {
        let message = Self.message("{\n  \"database\": \"X\"")
        #expect(message.contains("line 2,"), "\(message)")
        #expect(message.contains("invalid JSON"), "\(message)")
    }

    @Test func aFileThatIsNotUTF8IsPlacedWithoutTrapping() {
        var bytes = Array("{\"database\": \"".utf8)
        bytes += [0xFF, 0xC3]
        bytes += Array("\", oops}".utf8)
        let message: String
        do {
            _ = try EmulatorSchema(jsonData: Data(bytes))
            message = "loaded"
        } catch {
            message = "\(error)"
        }
        #expect(message.contains("line 1, column"), "\(message)")
    }
}
