#if os(Linux)
import Glibc
import Foundation
import FoundationNetworking
import Testing
import TestSupport

// `fm-emulator --verbose` writes its request lines to stderr without a request ever waiting for them: a harness
// that pipes stderr and never reads it (`stderr=subprocess.PIPE`, the classic trap) does not stall the emulator.
// The lines that find no room are dropped, counted, and the count is written once stderr is read again.

@Suite("fm-emulator --verbose never stalls a request on an unread stderr",
       .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct VerboseLogNeverStallsRequestsTests {
    @Test func requestsAreAnsweredWhileStderrIsAFullUnreadPipe() async throws {
        let executable = try #require(fmEmulatorExecutable)
        let process = try ChildProcess(executable, ["--port", "0", "--verbose"])
        let stdout = try #require(process.standardOutput)
        let stderr = try #require(process.standardError)
        defer { if process.isRunning { process.signal(SIGKILL) } }
        let line = try #require(await onOwnThread { EmulatorStopsWhenStdinClosesTests.firstLine(of: stdout) }, "no listening line")
        let base = try #require(URL(string: String(line.dropFirst("listening on ".count))))

        // Fill the child's stderr pipe, as a harness that never reads it would after enough requests.
        try EmulatorStopsWhenStdinClosesTests.fillStandardError(of: process)

        // Requests are answered all the same (each writes a line that cannot go out now).
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 300
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let (_, first) = try await session.data(from: base.appendingPathComponent("fmi/data/vLatest/productInfo"))
        #expect((first as? HTTPURLResponse)?.statusCode == 200)
        // Then more lines than the emulator holds while stderr takes none (a long database name in each: 120 × 3 KB).
        let long = String(repeating: "d", count: 3000)
        for _ in 0..<120 {
            let (_, response) = try await session.data(from: base.appendingPathComponent("fmi/data/vLatest/databases/\(long)/layouts/L/records"))
            #expect((response as? HTTPURLResponse)?.statusCode != nil)
        }

        // Once stderr is read, the lines that had room follow (the first request's among them), then how many were dropped.
        var text = ""
        let seen = DispatchSemaphore(value: 0)
        let reader = HTTPOrderLog()
        Thread.detachNewThread {
            var all = Data()
            while true {
                let chunk = stderr.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                all.append(chunk)
                if String(decoding: all, as: UTF8.self).contains("dropped") { break }
            }
            reader.append(String(decoding: all, as: UTF8.self))
            seen.signal()
        }
        #expect(await onOwnThread { seen.wait(timeout: .now() + 300) } == .success)
        text = reader.entries.first ?? ""
        #expect(text.contains("GET /fmi/data/vLatest/productInfo"), "\(text.suffix(400))")
        #expect(text.contains("request line(s) dropped"), "\(text.suffix(400))")
    }
}
#endif
