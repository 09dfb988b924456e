// One getRecord through a callback, on a DataAPI whose session is already open, with the coverage counters
// reset just before it: the files whose code runs for that call alone (see ../../getrecord-walk.sh).
import Dispatch
import Foundation
import SwiftFM
import SwiftFMEmulator

@_silgen_name("__llvm_profile_reset_counters")
func resetCoverageCounters()

func getRecordWaiting(_ api: DataAPI) -> String {
    let done = DispatchSemaphore(value: 0)
    let code = UncheckedCode()
    api.getRecord(layout: "Artists", recordId: 1) { _, result in
        code.value = result
        done.signal()
    }
    if done.wait(timeout: .now() + 60) == .timedOut { return "timed out" }
    return code.value
}

final class UncheckedCode: @unchecked Sendable { var value = "" }

let emulator = Emulator()
let url = try emulator.start()
let configuration = FMConfiguration(host: url.absoluteString, database: "Music",
                                    credentials: .basic(username: "admin", password: "admin"))
let api = DataAPI(configuration: configuration)
// The first call opens the session, the second runs every lazy initialiser of the path once more.
for _ in 0..<2 {
    let code = getRecordWaiting(api)
    guard code == "0" else { FileHandle.standardError.write(Data("getRecord: \(code)\n".utf8)); exit(1) }
}
resetCoverageCounters()
let code = getRecordWaiting(api)
exit(code == "0" ? 0 : 1)
