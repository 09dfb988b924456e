// fm-examples: the two example programs of SwiftFM.
//
//   swift run fm-examples            # all three, against the embedded emulator (or FM_HOST… if set)
//   swift run fm-examples daemon     # the Dispatch daemon, callbacks only, dispatchMain(); runs until
//                                    # Ctrl-C or SIGTERM, then shuts down cleanly
//   swift run fm-examples showcase   # a container round trip, a transparent 952 recovery, paging
//   swift run fm-examples tour       # the async/await tour
//
// With FM_HOST, FM_DATABASE, FM_USER and FM_PASSWORD set, both run against that server instead,
// read-only (FM_LAYOUT picks the layout to read; default: the first one the server lists).
import Foundation
import SwiftFM
import SwiftFMEmulator

let mode = CommandLine.arguments.dropFirst().first ?? "all"
guard ["all", "daemon", "showcase", "tour"].contains(mode) else {
    FileHandle.standardError.write(Data("usage: fm-examples [all|daemon|showcase|tour]\n".utf8))
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
    DaemonExample(target: target).run(stop: .onSignal) { finish($0) }
case "showcase":
    Task { finish(await Showcase(target: target).run()) }
case "tour":
    Task { finish(await AsyncTour(target: target).run()) }
default:
    // The daemon shows its clean shutdown by sending itself SIGTERM once its jobs are done.
    DaemonExample(target: target).run(stop: .selfSignal) { daemonOK in
        Task {
            let showcaseOK = await Showcase(target: target).run()
            finish(await AsyncTour(target: target).run() && showcaseOK && daemonOK)
        }
    }
}
dispatchMain()
