import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Containers end to end through `FMOData`: a file uploaded (streamed from disk) and downloaded to a file
/// (streamed to disk, past the in-memory size cap), byte for byte, on both surfaces; a container written
/// through OData read through the Data API, and one written through the Data API read through OData.
@Suite struct ODataContainerEndToEndTests {
    /// A PNG-signed file of `size` pseudo-random bytes.
    private func makeFile(_ size: Int) throws -> URL {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: size)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        bytes.replaceSubrange(0..<8, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-odata-\(UUID().uuidString).png")
        try Data(bytes).write(to: url)
        return url
    }

    private func target() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-odata-out-\(UUID().uuidString).bin")
    }

    private func same(_ a: URL, _ b: URL) throws -> Bool { try Data(contentsOf: a) == Data(contentsOf: b) }

    @Test func filesRoundTripByteForByteThroughBothAPIs() async throws {
        let fromOData = try makeFile(2 * 1024 * 1024 + 13)
        let fromDataAPI = try makeFile(1024 * 1024 + 7)
        let outputs = (0..<4).map { _ in target() }
        defer { for url in [fromOData, fromDataAPI] + outputs { try? FileManager.default.removeItem(at: url) } }

        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        let url = try emulator.start()
        defer { emulator.stop() }
        var configuration = odataConfiguration(url)
        configuration.maxResponseBytes = 512 * 1024   // below the files: only a streamed download gets them
        let api = DataAPI(configuration: configuration)
        let odata = FMOData(sharing: api)

        // OData: upload from a file (async), download to a file (callback).
        #expect(try await odata.uploadContainer(in: "Customers", key: "ALFKI", field: "photo", fileURL: fromOData) == 1)
        let upload = try #require(emulator.requestLog.last { $0.method == "PATCH" })
        #expect(upload.decodedPath.hasSuffix("/Customers('ALFKI')/photo"))
        #expect(upload.header("Content-Type") == "image/png")
        #expect(upload.header("Content-Disposition")?.contains(fromOData.lastPathComponent) == true)
        let (written, code) = await odataOnce(odata) { done in
            odata.downloadContainer(from: "Customers", key: "ALFKI", field: "photo", to: outputs[0]) { done($0, $1) }
        }
        #expect(code == "0" && written == outputs[0])
        #expect(try same(outputs[0], fromOData))
        // Into memory the same bytes are over the cap.
        await #expect(throws: FMError.self) { try await odata.downloadContainer(from: "Customers", key: "ALFKI", field: "photo") }

        // Written through OData, read through the Data API (its container URL, streamed to a file).
        let record = try await api.getRecord(layout: "Customers", recordId: 1)
        let link = try #require((record.records.first?["fieldData"] as? [String: Any])?["photo"] as? String)
        _ = try await api.downloadContainer(url: try #require(URL(string: link)), to: outputs[1])
        #expect(try same(outputs[1], fromOData))

        // Written through the Data API (callback, from a file), read through OData (async, to a file).
        let (_, uploadCode) = await callback(api) { api.uploadContainer(layout: "Customers", recordId: 2, field: "photo", fileURL: fromDataAPI, completion: $0) }
        #expect(uploadCode == "0")
        #expect(try await odata.downloadContainer(from: "Customers", key: "OBR", field: "photo", to: outputs[2]) == outputs[2])
        #expect(try same(outputs[2], fromDataAPI))

        // OData's callback upload replaces a container the Data API wrote; both APIs read the new bytes.
        let (changed, changeCode) = await odataOnce(odata) { done in
            odata.uploadContainer(in: "Customers", key: "OBR", field: "photo", fileURL: fromOData) { done($0, $1) }
        }
        #expect(changeCode == "0" && changed == 1)
        let obr = try await api.getRecord(layout: "Customers", recordId: 2)
        let obrLink = try #require((obr.records.first?["fieldData"] as? [String: Any])?["photo"] as? String)
        _ = try await api.downloadContainer(url: try #require(URL(string: obrLink)), to: outputs[3])
        #expect(try same(outputs[3], fromOData))
    }
}
