import Foundation
import SwiftFM

/// A Dispatch-based daemon in the style of the completion-handler era: every call is a callback,
/// every callback runs on the daemon's own serial queue, and `dispatchMain()` keeps the process alive.
final class DaemonExample: @unchecked Sendable {  // state is only touched on `queue`
    private let target: ExampleTarget
    private let queue = DispatchQueue(label: "fm-examples.daemon")
    private let api: DataAPI
    private var failures = 0

    init(target: ExampleTarget) {
        self.target = target
        api = DataAPI(configuration: target.configuration, callbackQueue: queue)
    }

    /// Runs the daemon's jobs one after another and reports whether every step succeeded.
    func run(_ done: @escaping @Sendable (Bool) -> Void) {
        say("daemon: callbacks on \(queue.label)")
        api.productInfo { info, code in
            self.report("productInfo", code, info.map { "\($0.name) \($0.version)" })
            self.api.layouts { layouts, code in
                let names = (layouts ?? []).flatMap { $0.isFolder ? $0.folderLayoutNames : [$0.name] }
                self.report("layouts", code, names.joined(separator: ", "))
                guard let layout = self.target.layout ?? names.first else { return self.end(done) }
                self.api.getRecords(layout: layout, limit: 5) { found, code in
                    self.report("getRecords(\(layout), limit: 5)", code,
                                found.map { "\($0.records.count) of \($0.dataInfo?.foundCount ?? 0)" })
                    guard self.target.writable else { return self.logout(done) }
                    self.writeCycle(layout: layout) { self.logout(done) }
                }
            }
        }
    }

    /// Create, read, edit with a modId, find, run a script, delete: against the emulator only.
    private func writeCycle(layout: String, then next: @escaping () -> Void) {
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

    private func logout(_ done: @escaping @Sendable (Bool) -> Void) {
        api.logout { _, code in
            self.report("logout", code, nil)
            self.end(done)
        }
    }

    private func end(_ done: @escaping @Sendable (Bool) -> Void) {
        say("daemon: \(failures == 0 ? "all steps succeeded" : "\(failures) step(s) failed")")
        done(failures == 0)
    }

    private func report(_ step: String, _ code: String, _ detail: String?) {
        if code != "0" { failures += 1 }
        say("daemon: \(step) → code \(code)\(detail.map { ", \($0)" } ?? "")")
    }
}
