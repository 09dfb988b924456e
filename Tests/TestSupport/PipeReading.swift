#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

#if canImport(Glibc)
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemRead = Darwin.read
#endif

extension FileHandle {
    /// Every byte until end of file, read with `read(2)` and retried on `EINTR`. corelibs'
    /// `readDataToEndOfFile()` traps (`try!`) when a signal (a child's `SIGCHLD`) interrupts its read.
    public func readAllRetryingInterrupts() -> Data {
        var data = Data()
        while true {
            let chunk = readAvailableRetryingInterrupts()
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// What one `read(2)` returns (waiting for some bytes), retried on `EINTR`; empty at end of file or on an
    /// error. In place of corelibs' `availableData`, which traps the same way.
    public func readAvailableRetryingInterrupts() -> Data {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(fileDescriptor, $0.baseAddress, $0.count) }
            if count > 0 { return Data(buffer[0..<count]) }
            if count < 0 && errno == EINTR { continue }
            return Data()
        }
    }
}
