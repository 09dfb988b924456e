import Foundation

/// The phases at which a record or find request can run a script (WIRE.md §8).
enum ScriptPhase: String {
    case prerequest, presort, after
}

/// The scripts a request asked for: name and optional parameter per phase.
struct ScriptPlan {
    var prerequest: (name: String, param: String?)?
    var presort: (name: String, param: String?)?
    var after: (name: String, param: String?)?

    /// Reads `script`, `script.param`, `script.prerequest`, … through `value`.
    init(_ value: (String) -> String?) {
        if let n = value("script.prerequest") { prerequest = (n, value("script.prerequest.param")) }
        if let n = value("script.presort") { presort = (n, value("script.presort.param")) }
        if let n = value("script") { after = (n, value("script.param")) }
    }

    /// The script asked for at `phase`, if any.
    subscript(phase: ScriptPhase) -> (name: String, param: String?)? {
        switch phase {
        case .prerequest: return prerequest
        case .presort: return presort
        case .after: return after
        }
    }
}

/// Collected outcomes, written into `response` in the order of WIRE.md §8.
struct ScriptResults {
    var prerequest: ScriptOutcome?
    var presort: ScriptOutcome?
    var after: ScriptOutcome?

    /// The outcome recorded for `phase`.
    subscript(phase: ScriptPhase) -> ScriptOutcome? {
        get {
            switch phase {
            case .prerequest: return prerequest
            case .presort: return presort
            case .after: return after
            }
        }
        set {
            switch phase {
            case .prerequest: prerequest = newValue
            case .presort: presort = newValue
            case .after: after = newValue
            }
        }
    }

    var pairs: [(String, JSON)] {
        var out: [(String, JSON)] = []
        for (suffix, outcome) in [(".prerequest", prerequest), (".presort", presort), ("", after)] {
            guard let outcome else { continue }
            if let r = outcome.result { out.append(("scriptResult" + suffix, .string(r))) }
            out.append(("scriptError" + suffix, .string(outcome.error)))
        }
        return out
    }
}

extension EmulatorState {
    /// Runs a script by name (registered closures first, then schema scripts); unknown → error 104.
    /// Step scripts (SCHEMA.md "Scripts with steps") run on `layout` with the found set `found` (all
    /// records of the layout's table when `nil`), starting on record `current` (else the first).
    mutating func runScript(_ name: String, param: String?, phase: String, layout: EmulatorSchema.Layout,
                            foundCount: Int? = nil, found: [Int]?, current: Int?, session: String?, now: Date,
                            depth: Int = 0) -> ScriptOutcome {
        let ids = found ?? occurrenceTable(layout.table)?.order ?? []
        let invocation = ScriptInvocation(name: name, parameter: param, layout: layout.name, database: schema.database,
                                          phase: phase, foundCount: foundCount ?? ids.count)
        if let closure = scriptClosures[name.lowercased()] {
            return closure(invocation)
        }
        guard let s = script(name) else { return .error("104") }
        if let steps = s.steps {
            return runSteps(s, steps: steps, param: param, layout: layout, found: ids, current: current, session: session,
                            now: now, depth: depth)
        }
        var result: String?
        switch s.returns {
        case .parameter?: result = param ?? ""
        case .foundCount?:
            if let l = s.layout.flatMap({ self.layout($0) }), let t = occurrenceTable(l.table) {
                result = String(t.records.count)
            } else {
                result = String(invocation.foundCount)
            }
        case let .literal(text)?: result = text
        case nil: result = nil
        }
        return ScriptOutcome(result: result, error: s.error)
    }

    /// Runs the script `plan` asks for at `phase`, if any, and records its outcome in `results`.
    /// `found` is the request's found set so far (`nil`: the whole table), `current` its current record.
    mutating func runPhase(_ phase: ScriptPhase, of plan: ScriptPlan, layout: EmulatorSchema.Layout,
                           foundCount: Int, found: [Int]? = nil, current: Int? = nil,
                           ctx: RequestContext, into results: inout ScriptResults) {
        guard let s = plan[phase] else { return }
        results[phase] = runScript(s.name, param: s.param, phase: phase.rawValue, layout: layout, foundCount: foundCount,
                                   found: found, current: current ?? found?.first, session: ctx.token, now: ctx.now)
    }

    /// Script keys from the query string (GET, DELETE).
    func scriptPlanFromQuery(_ ctx: RequestContext) -> ScriptPlan {
        ScriptPlan { key in ctx.query.first { $0.0 == key }?.1 }
    }

    /// Script keys from a JSON body; a key whose value is not a string or number is 1708.
    func scriptPlanFromBody(_ ctx: RequestContext) throws -> ScriptPlan {
        for key in ["script", "script.param", "script.prerequest", "script.prerequest.param", "script.presort", "script.presort.param"] {
            if let value = ctx.body[key], value.scalarText == nil { throw FMError("1708") }
        }
        return ScriptPlan { key in ctx.body[key]?.scalarText }
    }

    /// E18: `GET /databases/{db}/layouts/{layout}/script/{script}`.
    mutating func runScriptRoute(_ layout: EmulatorSchema.Layout, name: String, _ ctx: inout RequestContext) throws -> Reply {
        guard scriptClosures[name.lowercased()] != nil || script(name) != nil else { throw FMError("104") }
        let outcome = runScript(name, param: ctx.queryValue("script.param"), phase: "run", layout: layout,
                                found: nil, current: nil, session: ctx.token, now: ctx.now)
        var pairs: [(String, JSON)] = []
        if let r = outcome.result { pairs.append(("scriptResult", .string(r))) }
        pairs.append(("scriptError", .string(outcome.error)))
        return Reply(response: .object(pairs))
    }
}
