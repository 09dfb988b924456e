import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SwiftFM

/// A Dispatch-based daemon in the style of the completion-handler era: every call is a callback,
/// every callback runs on the daemon's own serial queue, and `dispatchMain()` keeps the process alive.
/// SIGTERM and SIGINT (a service manager stopping it, Ctrl-C) shut it down cleanly: calls in flight
/// finish, later calls complete with `-1012`, and the server session is logged out.
final class DaemonExample: @unchecked Sendable {  // state is only touched on `queue`
    /// How the daemon stops once its jobs are done.
    enum Stop {
        /// Wait for SIGTERM or SIGINT, as a real daemon does (`fm-examples daemon`).
        case onSignal
        /// Send itself SIGTERM with a call in flight, to show the clean shutdown (`fm-examples`).
        case selfSignal
    }

    private let target: ExampleTarget
    private let queue = DispatchQueue(label: "fm-examples.daemon")
    private let api: DataAPI
    private var failures = 0
    private var layout: String?
    private var signalSources: [DispatchSourceSignal] = []
    private var shuttingDown = false

    init(target: ExampleTarget) {
        self.target = target
        api = DataAPI(configuration: target.configuration, callbackQueue: queue)
    }

    /// Runs the daemon's jobs one after another and reports whether every step succeeded.
    func run(stop: Stop = .selfSignal, _ done: @escaping @Sendable (Bool) -> Void) {
        let jobsDone: @Sendable (@escaping @Sendable (Bool) -> Void) -> Void = { done in self.serve(until: stop, done) }
        say("daemon: callbacks on \(queue.label)")
        api.productInfo { info, code in
            self.report("productInfo", code, info.map { "\($0.name) \($0.version)" })
            self.api.layouts { layouts, code in
                let names = (layouts ?? []).flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] }
                self.report("layouts", code, names.joined(separator: ", "))
                guard let layout = self.target.layout ?? names.first else { return jobsDone(done) }
                self.layout = layout
                self.api.getRecords(layout: layout, limit: 5) { found, code in
                    self.report("getRecords(\(layout), limit: 5)", code,
                                found.map { "\($0.records.count) of \($0.dataInfo?.foundCount ?? 0)" })
                    guard self.target.writable else { return jobsDone(done) }
                    self.writeCycle(layout: layout) { jobsDone(done) }
                }
            }
        }
    }

    /// Create, read, edit with a modId, find, run a script, delete: against the emulator only.
    private func writeCycle(layout: String, then next: @escaping @Sendable () -> Void) {
        api.createRecord(layout: layout, fieldData: ["name": "Daemon Band", "city": "Austin"]) { ref, code in
            self.report("createRecord", code, ref.map { "recordId \($0.recordId)" })
            guard let ref, let id = Int(ref.recordId) else { return next() }
            self.api.editRecord(layout: layout, recordId: id, fieldData: ["city": "Dallas"], modId: ref.modId) { edit, code in
                self.report("editRecord(modId: \(ref.modId))", code, edit.map { "modId now \($0.modId)" })
                self.api.find(layout: layout, request: FMFindRequest(queries: [FMQuery(["city": "==Dallas"])])) { found, code in
                    self.report("find(city == Dallas)", code, found.map { "\($0.records.count) record(s)" })
                    self.api.runScript(layout: layout, script: "Echo", parameter: "hello from a daemon") { result, code in
                        self.report("runScript(Echo)", code, result?.result)
                        self.api.deleteRecord(layout: layout, recordId: id) { _, code in
                            self.report("deleteRecord(\(id))", code, nil)
                            next()
                        }
                    }
                }
            }
        }
    }

    /// Runs until SIGTERM or SIGINT, then shuts down cleanly. Signals are handled by `DispatchSource`s on the
    /// daemon's queue (their default action, ending the process at once, is turned off first).
    private func serve(until stop: Stop, _ done: @escaping @Sendable (Bool) -> Void) {
        // A signal that arrives before its source is registered with the kernel is lost (its default action
        // is already off), so the self-signal waits until both sources are registered.
        let registered = DispatchGroup()
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { self.shutDown(after: name, done) }
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.resume()
            signalSources.append(source)
        }
        switch stop {
        case .onSignal:
            say("daemon: running; stop it with Ctrl-C (SIGINT) or SIGTERM")
        case .selfSignal:
            registered.notify(queue: queue) { [self] in
                if let layout {
                    // A call in flight when the signal comes (the emulator holds its answer a moment).
                    target.emulator?.inject(.delay(0.2), matching: "/records")
                    api.getRecords(layout: layout, limit: 1) { found, code in
                        self.report("getRecords in flight during the shutdown", code, found.map { "\($0.records.count) record(s)" })
                    }
                }
                say("daemon: sending itself SIGTERM, as a service manager stopping it would")
                kill(getpid(), SIGTERM)
            }
        }
    }

    /// The clean shutdown: no new calls, calls in flight finish, every server session is logged out.
    private func shutDown(after signalName: String, _ done: @escaping @Sendable (Bool) -> Void) {
        guard !shuttingDown else { return }
        shuttingDown = true
        signalSources.forEach { $0.cancel() }
        signalSources = []
        signal(SIGTERM, SIG_DFL)
        signal(SIGINT, SIG_DFL)
        say("daemon: \(signalName) received: shutting down (no new calls; calls in flight may finish)")
        api.shutdown(grace: 10) {
            say("daemon: shut down: every session logged out, token store cleared"
                + (self.target.emulator.map { ", the server holds \($0.activeSessionCount) session(s)" } ?? ""))
            self.api.productInfo { _, code in
                let refused = code == FMError.ClientCode.shuttingDown
                if !refused { self.failures += 1 }
                say("daemon: a call after the shutdown → code \(code)\(refused ? " (shutting down), not sent" : "")")
                self.end(done)
            }
        }
    }

    private func end(_ done: @escaping @Sendable (Bool) -> Void) {
        say("daemon: \(failures == 0 ? "all steps succeeded" : "\(failures) step(s) failed")")
        done(failures == 0)
    }

    /// One line per step; called inside the step's completion, so a failure's line is the whole error
    /// (`FMError.current`: what went wrong and where), not only its code.
    private func report(_ step: String, _ code: String, _ detail: String?) {
        guard code == "0" else {
            failures += 1
            return say("daemon: \(step) → \(FMError.current?.description ?? "code \(code)")")
        }
        say("daemon: \(step) → code \(code)\(detail.map { ", \($0)" } ?? "")")
    }
}
