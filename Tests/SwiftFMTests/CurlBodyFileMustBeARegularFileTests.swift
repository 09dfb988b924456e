#if canImport(Glibc)
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Testing
@testable import SwiftFM

// Contract: FMCurlTransport sends a request's body file only when it is a regular file (as UploadSource checks before
// the engine hands it on): anything else — a device such as /dev/zero, a FIFO, a directory; the caller's file swapped
// for one between the engine's check and the transfer, or a body file handed to the transport directly — fails the
// transfer with -1009 naming the file, before anything is sent, and its opening never waits (a FIFO opened for reading
// without O_NONBLOCK waits for a writer: for ever, on the sending thread). Before, the file was opened blocking and
// its size read as it came: /dev/zero and a FIFO (with a writer) went out as an empty body, answered 204 as a success.

@Suite("Curl: a body file must be a regular file")
struct CurlBodyFileMustBeARegularFileTests {
    enum Source: String, CaseIterable, CustomTestStringConvertible {
        case device, fifo, directory
        var testDescription: String { rawValue }
    }

    @Test(arguments: Source.allCases)
    func aBodyFileThatIsNotARegularFileFailsBeforeSending(_ source: Source) async throws {
        let server = try UploadedFileThatChangesFailsClearlyTests.PausingServer(pauseAfter: 0)
        defer { server.stop() }
        server.goOn.signal()
        var path: URL
        var writer: Int32 = -1
        switch source {
        case .device:
            path = URL(fileURLWithPath: "/dev/zero")
        case .fifo:
            path = UploadSourceMustBeARegularFileTests.temporary("body.fifo")
            #expect(mkfifo(path.path, 0o600) == 0)
            // A writer holds it open: a blocking open returns at once (the old code then sent an empty body).
            writer = open(path.path, O_RDWR | O_NONBLOCK)
            #expect(writer >= 0)
        case .directory:
            path = FileManager.default.temporaryDirectory
        }
        defer {
            if writer >= 0 { close(writer) }
            if source == .fifo { try? FileManager.default.removeItem(at: path) }
        }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/fmi/odata/v4/DB/contacts(1)/photo")!)
        request.httpMethod = "PATCH"
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let transport = FMCurlTransport(idleTimeout: 3600)
        let ended = Recorder<String>()
        _ = transport.send(FMTransportRequest(urlRequest: request, bodyFile: path), events: FMTransportEvents(
            response: { _ in true }, data: { _ in true },
            complete: { error in
                ended.record(error.map { FMError.fromTransport($0).code + " " + FMError.fromTransport($0).message } ?? "success")
            }))
        let outcome = try #require(await ended.value().first)
        #expect(outcome.hasPrefix(FMError.ClientCode.fileError + " "), "\(outcome)")
        #expect(outcome.contains(path.path) && outcome.contains("not a regular file"), "\(outcome)")
        #expect(server.contentLength == -1, "nothing was sent")
    }
}
#endif
