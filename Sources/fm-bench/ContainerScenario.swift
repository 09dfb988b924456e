import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: container

    /// A `--container-mib` MiB file (default 1 GiB, a pattern written here, removed after) uploaded into a
    /// container field with the streamed `uploadContainer(…fileURL:…)`, then downloaded with
    /// `downloadContainer(url:to:)`: sizes and checksums must match, and the peak RSS of each transfer is
    /// measured above the process's RSS just before it (VmHWM, reset first). The emulator's own peak RSS (its
    /// process) is shown for reference.
    func container() async throws {
        let size = Int64(settings.containerMiB) * 1024 * 1024
        let source = directory.appendingPathComponent("container-source.bin")
        let target = directory.appendingPathComponent("container-download.bin")
        defer {
            try? FileManager.default.removeItem(at: source)
            try? FileManager.default.removeItem(at: target)
        }
        let written = try Self.writePattern(to: source, size: size)
        let transfer = try await containerRun(source: source, target: target)
        let read = try Self.checksum(of: target)
        containerReport(transfer, written: written, read: read)
    }

    /// One transfer's time, peak RSS and the RSS just before it (bytes).
    struct ContainerTransfer {
        var upSeconds = 0.0, upPeak = 0, upBaseline = 0
        var downSeconds = 0.0, downPeak = 0, downBaseline = 0
        var resettable = false
    }

    /// Run: the streamed upload, then the download of what the field holds; the peak RSS of each.
    func containerRun(source: URL, target: URL) async throws -> ContainerTransfer {
        var transfer = ContainerTransfer()
        transfer.resettable = resetPeakRSS()
        transfer.upBaseline = procStatus("VmRSS") ?? 0
        transfer.upSeconds = try await seconds {
            _ = try await api.uploadContainer(layout: "Files", recordId: 1, field: "file", fileURL: source,
                                              fileName: "big.bin", mimeType: "application/octet-stream")
        }
        transfer.upPeak = procStatus("VmHWM") ?? 0

        let record = try await api.getRecord(layout: "Files", recordId: 1)
        guard let fields = record.first?["fieldData"] as? [String: Any], let text = fields["file"] as? String, let url = URL(string: text) else {
            throw BenchError("the container field holds no URL after the upload")
        }
        _ = resetPeakRSS()
        transfer.downBaseline = procStatus("VmRSS") ?? 0
        transfer.downSeconds = try await seconds { _ = try await api.downloadContainer(url: url, to: target) }
        transfer.downPeak = procStatus("VmHWM") ?? 0
        return transfer
    }

    /// Report: rates, peaks above the baseline (target over HTTPS: < 40 MB), the bytes compared.
    func containerReport(_ transfer: ContainerTransfer, written: (count: Int64, sum: UInt64), read: (count: Int64, sum: UInt64)) {
        let size = Int64(settings.containerMiB) * 1024 * 1024
        let emulatorPeak = emulator.status("VmHWM"), emulatorAnon = emulator.status("RssAnon"), emulatorFile = emulator.status("RssFile")
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1e6) }
        let rate = { (seconds: Double) in String(format: "%.1f s, %.0f MB/s", seconds, Double(size) / 1e6 / seconds) }
        let target = reach.isHTTPS ? "target < 40 MB" : "target < 100 MB"
        say("container over \(baseURL.scheme ?? "http"), a \(settings.containerMiB) MiB file up with uploadContainer(…fileURL:…) and down with "
            + String(format: "downloadContainer(url:to:) (load average %.2f):", loadAverage()))
        say("  upload   \(rate(transfer.upSeconds)); peak RSS \(mb(transfer.upPeak - transfer.upBaseline)) above the baseline of \(mb(transfer.upBaseline))   \(target)")
        say("  download \(rate(transfer.downSeconds)); peak RSS \(mb(transfer.downPeak - transfer.downBaseline)) above the baseline of \(mb(transfer.downBaseline))   \(target)")
        say("  \(read.count == written.count && read.sum == written.sum ? "same" : "DIFFERENT") bytes: \(read.count) of \(written.count), checksum "
            + String(format: "%016llx %@ %016llx", read.sum, read.sum == written.sum ? "=" : "≠", written.sum)
            + (transfer.resettable ? "" : " (peak not resettable here: VmHWM of the whole run)"))
        if let emulatorPeak, let emulatorAnon, let emulatorFile {
            say("  the emulator process (its own memory): peak RSS \(mb(emulatorPeak)), now \(mb(emulatorAnon)) heap + \(mb(emulatorFile)) file-backed (the spooled upload, mapped)")
        }
    }

    /// A cheap checksum: 64-bit words mixed in order.
    static func mix(_ sum: inout UInt64, _ buffer: UnsafeRawBufferPointer) {
        let words = buffer.count / 8
        for i in 0..<words {
            sum = (sum ^ buffer.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) &* 0x100_0000_01B3 &+ UInt64(truncatingIfNeeded: i)
        }
        for i in (words * 8)..<buffer.count { sum = (sum ^ UInt64(buffer[i])) &* 0x100_0000_01B3 }
    }

    /// Writes `size` bytes of a pattern that differs per 1 MiB block; returns the count and checksum.
    static func writePattern(to file: URL, size: Int64) throws -> (count: Int64, sum: UInt64) {
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else { throw BenchError("cannot create \(file.path)") }
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        let blockSize = 1024 * 1024
        var block = [UInt8](repeating: 0, count: blockSize)
        var sum: UInt64 = 0xCBF2_9CE4_8422_2325
        var left = size
        var index: UInt64 = 0
        while left > 0 {
            let count = Int(min(Int64(blockSize), left))
            var state = index &* 0x9E37_79B9_7F4A_7C15 | 1
            for i in 0..<count {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17
                block[i] = UInt8(truncatingIfNeeded: state)
            }
            let chunk = Data(block[0..<count])
            chunk.withUnsafeBytes { mix(&sum, $0) }
            try handle.write(contentsOf: chunk)
            left -= Int64(count)
            index += 1
        }
        return (size, sum)
    }

    /// The byte count and checksum of `file`, read 1 MiB at a time (the same blocks as ``writePattern(to:size:)``).
    static func checksum(of file: URL) throws -> (count: Int64, sum: UInt64) {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var sum: UInt64 = 0xCBF2_9CE4_8422_2325
        var count: Int64 = 0
        let blockSize = 1024 * 1024
        var pending = Data()
        while true {
            let chunk = try handle.read(upToCount: blockSize) ?? Data()
            pending.append(chunk)
            count += Int64(chunk.count)
            // Mix whole 1 MiB blocks (a short read must not change the sum), the last one as it is.
            while pending.count >= blockSize || (chunk.isEmpty && !pending.isEmpty) {
                let take = min(blockSize, pending.count)
                pending.prefix(take).withUnsafeBytes { mix(&sum, $0) }
                pending = Data(pending.dropFirst(take))
            }
            if chunk.isEmpty { break }
        }
        return (count, sum)
    }
}
