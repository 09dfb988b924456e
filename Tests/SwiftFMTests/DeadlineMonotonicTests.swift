import Foundation
import Testing
@testable import SwiftFM

#if os(Linux)
/// The clock thread must sleep on the monotonic clock: a wait measured on the wall clock (`sem_timedwait`,
/// what a `DispatchSemaphore`'s timed wait is on Linux) lasts as much longer as the wall clock is set back
/// (NTP stepping it, a VM resumed), and with it every call's deadline and every back-off of the process.
/// `DispatchSourceTimer`s, which the clock replaced, wait on the monotonic clock.
@Suite("Deadline: the clock sleeps on the monotonic clock")
struct DeadlineMonotonicTests {
    /// The kernel's flag on a futex wait measured on `CLOCK_REALTIME`.
    static let futexClockRealtime = 256
    /// `futex` on x86_64 and aarch64.
    #if arch(x86_64)
    static let futexSyscall = 202
    #else
    static let futexSyscall = 98
    #endif

    /// The clock thread's `/proc/self/task/<tid>` directory, found by its name.
    static func clockThreadDirectory() -> String? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.map { "/proc/self/task/\($0)" }.first { directory in
            let name = (try? String(contentsOfFile: directory + "/comm", encoding: .utf8)) ?? ""
            return name.trimmingCharacters(in: .whitespacesAndNewlines) == "SwiftFM.clock"
        }
    }

    /// The futex operation of a timed futex wait (`FUTEX_WAIT_BITSET`, how glibc waits with a timeout on a
    /// semaphore or a condition variable) the thread is blocked in, or `nil` (running, or blocked in another call).
    static func timedFutexWait(_ directory: String) -> Int? {
        guard let text = try? String(contentsOfFile: directory + "/syscall", encoding: .utf8) else { return nil }
        // `number uaddr op val timeout …`, the arguments in hexadecimal.
        let fields = text.split(separator: " ").map(String.init)
        guard fields.count >= 5, Int(fields[0]) == futexSyscall,
              let operation = Int(fields[2].replacingOccurrences(of: "0x", with: ""), radix: 16) else { return nil }
        let waitBitset = 9
        guard operation & 0x7F == waitBitset, fields[4] != "0x0" else { return nil }
        return operation
    }

    /// The clock thread carries its name where profilers and debuggers read it (it showed as the dispatch
    /// worker that started it: Foundation's `Thread.name` never reaches the kernel on Linux).
    @Test func theClockThreadIsNamedForTheKernel() async {
        let fired = DispatchSemaphore(value: 0)
        _ = Deadline.after(seconds: 0) { fired.signal() }   // the clock thread exists and has run
        #expect(await onOwnThread { fired.wait(timeout: TestBound.deadline) } == .success)
        #expect(Self.clockThreadDirectory() != nil)
    }

    @Test func theClockThreadsTimedWaitIsNotOnTheWallClock() async throws {
        // An hour-long timer: the thread has something to wait for, with a timeout, for the whole test.
        let pending = Deadline.after(seconds: 3600) {}
        defer { pending.cancel() }
        let fired = DispatchSemaphore(value: 0)
        _ = Deadline.after(seconds: 0) { fired.signal() }   // the clock thread exists and has run
        #expect(await onOwnThread { fired.wait(timeout: TestBound.deadline) } == .success)
        let directory = try #require(Self.clockThreadDirectory(), "no thread named SwiftFM.clock")
        // Wait (bounded) until the thread is blocked in a futex wait: then read how it waits.
        let seen = await onOwnThread { () -> Int? in
            let bound = TestBound.deadline
            while DispatchTime.now() < bound {
                if let operation = Self.timedFutexWait(directory) { return operation }
                usleep(1_000)   // polling the kernel's view of the thread: there is no event to wait on
            }
            return nil
        }
        let operation = try #require(seen, "the clock thread was never seen in a timed futex wait")
        #expect(operation & Self.futexClockRealtime == 0,
                "the clock thread waits on CLOCK_REALTIME (futex op 0x\(String(operation, radix: 16))): a wall-clock step back delays every timer")
    }
}
#endif
