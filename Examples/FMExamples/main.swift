// fm-examples: the two example programs of SwiftFM.
//
//   swift run fm-examples            # both, against the embedded emulator (or FM_HOST… if set)
//   swift run fm-examples daemon     # the Dispatch daemon, callbacks only, dispatchMain()
//   swift run fm-examples tour       # the async/await tour
//
// With FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD set, both run against that server instead,
// read-only (FM_LAYOUT picks the layout to read; default: the first one the server lists).
import Foundation
import SwiftFM
import SwiftFMEmulator

let mode = CommandLine.arguments.dropFirst().first ?? "all"
guard ["all", "daemon", "tour"].contains(mode) else {
    FileHandle.standardError.write(Data("usage: fm-examples [all|daemon|tour]\n".utf8))
    exit(2)
}

let target: ExampleTarget
do {
    target = try ExampleTarget.fromEnvironment()
} catch {
    FileHandle.standardError.write(Data("fm-examples: \(error)\n".utf8))
    exit(1)
}
say("target: \(target.summary)")

@Sendable func finish(_ ok: Bool) -> Never {
    target.emulator?.stop()
    say(ok ? "done" : "failed")
    exit(ok ? 0 : 1)
}

switch mode {
case "daemon":
    DaemonExample(target: target).run { finish($0) }
case "tour":
    Task { finish(await AsyncTour(target: target).run()) }
default:
    DaemonExample(target: target).run { daemonOK in
        Task { finish(await AsyncTour(target: target).run() && daemonOK) }
    }
}
dispatchMain()
