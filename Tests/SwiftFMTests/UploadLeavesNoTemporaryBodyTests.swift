import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import SwiftFM

// Contract: the Data API's upload from a file URL assembles its multipart body in a private temporary file, and
// removes it however the call ends — out of time or cancelled while the server does not take the body — by the time
// its connection is closed, over both transports; the caller's file is left as it was.

@Suite("Upload leaves no temporary body")
struct UploadLeavesNoTemporaryBodyTests {
    /// The temporary body files (`SwiftFM-upload-…`) of an upload of `source`: those whose part head names its file
    /// (a name made unique by ``UploadSourceMustBeARegularFileTests/temporary(_:)``). Not recognised by size: the
    /// temporary directory is shared with every process on the machine, and another run of this suite at the same
    /// time writes bodies of the same sizes (seen on a shared machine: two of them, taken for this run's, failed it).
    static func bodies(of source: URL) -> [String] {
        let directory = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let mark = Data("filename=\"\(source.lastPathComponent)\"".utf8)
        return names.filter { name in
            guard name.hasPrefix("SwiftFM-upload-"),
                  let file = FileHandle(forReadingAtPath: directory.appendingPathComponent(name).path) else { return false }
            defer { try? file.close() }
            return (try? file.read(upToCount: 4096))?.range(of: mark) != nil
        }
    }

    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case deadline, cancel
        var testDescription: String { rawValue }
    }

    /// Held.
    @Test(arguments: Ending.allCases, Wire.allCases)
    func anUploadTheServerNeverTakesLeavesNothing(_ ending: Ending, _ wire: Wire) async throws {
        let size = 6 * 1024 * 1024 + 4321
        let source = UploadSourceMustBeARegularFileTests.temporary("big.bin")
        try Data(repeating: 0x5A, count: size).write(to: source)
        defer { try? FileManager.default.removeItem(at: source) }
        let server = HostileServer(headsOnly: { _ in .silent })
        defer { server.stop() }
        // The silence allowed (`timeout`) is long: only the deadline or the cancel ends the call, however loaded the machine.
        let api = HostileServerTests().makeAPI(server, wire, timeout: 600) { $0.containerTimeout = ending == .deadline ? 2 : 600 }
        let recorder = Recorder<String>()
        let request = api.uploadContainer(layout: "L", recordId: 1, field: "photo", fileURL: source) { _, code in recorder.record(code) }
        if ending == .cancel {
            #expect(await server.waitForHeads(1))
            // The exchange is running (the server never answers, the deadline is far): its body is there and is
            // recognised, so that the check below is not vacuous.
            #expect(Self.bodies(of: source).count == 1)
            request.cancel()
        }
        let code = await recorder.value().first
        #expect(code == (ending == .deadline ? FMError.ClientCode.timeout : FMError.ClientCode.cancelled), "\(String(describing: code))")
        // The body is removed as the exchange is stopped, before its connection is closed (the call may complete first).
        #expect(await server.waitForCloses(1))
        #expect(Self.bodies(of: source).isEmpty, "the temporary body is removed")
        #expect((try? Data(contentsOf: source))?.count == size, "the caller's file is as it was")
    }
}
