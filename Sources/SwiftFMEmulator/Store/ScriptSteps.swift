import Foundation

/// One step of a schema script (see SCHEMA.md "Scripts with steps"). Steps are read from a schema file;
/// Swift code builds them with ``EmulatorSchema/Script/init(_:stepsJSON:layout:)``.
public struct ScriptStep: Sendable {
    /// The FileMaker step name, e.g. `"Set Field"`.
    public let name: String
    let kind: Kind

    indirect enum Kind: Sendable {
        case setVariable(String, ScriptExpr)
        case setField(String, repetition: Int, ScriptExpr)
        case newRecord, deleteRecord, duplicateRecord
        case goToLayout(String)
        case goToRecord(String, exitAfterLast: Bool)
        case performFind([(omit: Bool, criteria: [(String, FindValue)])])
        case showAllRecords
        case sortRecords([EmulatorSchema.SortKey])
        case loop([ScriptStep])
        case exitLoopIf(ScriptExpr)
        case ifThen(ScriptExpr, [ScriptStep], [ScriptStep])
        case setError(ScriptExpr)
        case exitScript(ScriptExpr?)
        case performScript(String, ScriptExpr?)
        case nothing
    }

    /// A find criterion: literal find text, or an expression computed when the step runs.
    enum FindValue: Sendable {
        case text(String)
        case calc(ScriptExpr)
    }

    /// The step names understood (lower-cased) → canonical name.
    static let names: [String: String] = [
        "set variable": "Set Variable", "set field": "Set Field",
        "new record": "New Record", "new record/request": "New Record",
        "delete record": "Delete Record", "delete record/request": "Delete Record",
        "duplicate record": "Duplicate Record", "duplicate record/request": "Duplicate Record",
        "go to layout": "Go to Layout", "go to record": "Go to Record", "go to record/request/page": "Go to Record",
        "perform find": "Perform Find", "show all records": "Show All Records", "sort records": "Sort Records",
        "loop": "Loop", "exit loop if": "Exit Loop If", "if": "If", "set error": "Set Error", "exit script": "Exit Script",
        "perform script": "Perform Script", "commit records": "Commit Records", "commit records/requests": "Commit Records",
        "set error capture": "Set Error Capture", "allow user abort": "Allow User Abort", "comment": "Comment", "#": "Comment",
    ]

    /// Parses the `steps` array of a script; `place` names it in errors.
    static func parseList(_ json: JSON, place: String) throws -> [ScriptStep] {
        guard let items = json.arrayValue else { throw EmulatorSchemaError("\(place) must be an array of steps") }
        return try items.enumerated().map { try parse($1, place: "\(place)[\($0)]") }
    }

    /// A `Set Field` target: `name[rep]` (FileMaker's form) or `name(rep)`; repetition 1 without either.
    static func fieldAndRepetition(_ text: String, place: String) throws -> (String, Int) {
        if text.hasSuffix("]"), let open = text.lastIndex(of: "["),
           let n = Int(text[text.index(after: open)..<text.index(before: text.endIndex)]), n >= 1 {
            return (String(text[..<open]), n)
        }
        let (base, r) = splitRepetition(text)
        guard r >= 1 else { throw EmulatorSchemaError("\(place).field has a bad repetition") }
        return (base, r)
    }

    /// The `query` of a `Perform Find` step: requests of find text or `{"calc": expression}` criteria.
    static func parseFindRequests(_ json: JSON?, place: String) throws -> [(omit: Bool, criteria: [(String, FindValue)])] {
        guard let requests = json?.arrayValue, !requests.isEmpty else {
            throw EmulatorSchemaError("\(place).query must be a non-empty array of find requests")
        }
        var parsed: [(omit: Bool, criteria: [(String, FindValue)])] = []
        for (r, request) in requests.enumerated() {
            guard let rp = request.objectPairs else { throw EmulatorSchemaError("\(place).query[\(r)] must be an object") }
            var omit = false
            var criteria: [(String, FindValue)] = []
            for (k, v) in rp {
                if k.lowercased() == "omit" {
                    omit = ["true", "1"].contains(v.scalarText?.lowercased() ?? "")
                } else if let t = v.scalarText {
                    criteria.append((k, .text(t)))
                } else if let calc = v["calc"]?.stringValue, v.objectPairs?.count == 1 {
                    do { criteria.append((k, .calc(try ScriptExpr.parse(calc)))) } catch let e as ExprError {
                        throw EmulatorSchemaError("\(place).query[\(r)].\(k).calc: \(e.message)")
                    }
                } else {
                    throw EmulatorSchemaError("\(place).query[\(r)].\(k) must be find text or {\"calc\": expression}")
                }
            }
            parsed.append((omit, criteria))
        }
        return parsed
    }

    static func parse(_ json: JSON, place: String) throws -> ScriptStep {
        guard let pairs = json.objectPairs else { throw EmulatorSchemaError("\(place) must be an object with a \"step\" key") }
        guard let stepName = json["step"]?.stringValue else { throw EmulatorSchemaError("\(place).step must be a step name") }
        guard let canonical = names[stepName.lowercased()] else {
            throw EmulatorSchemaError("\(place): unknown script step \"\(stepName)\" (supported: \(Set(names.values).sorted().joined(separator: ", ")))")
        }
        func expr(_ key: String, required: Bool = true) throws -> ScriptExpr? {
            guard let v = json[key] else {
                if required { throw EmulatorSchemaError("\(place) (\(canonical)) needs \"\(key)\"") }
                return nil
            }
            if case let .number(n) = v { return .literal(.number(n)) }
            guard let text = v.stringValue else { throw EmulatorSchemaError("\(place).\(key) must be an expression (a string)") }
            do { return try ScriptExpr.parse(text) } catch let e as ExprError {
                throw EmulatorSchemaError("\(place).\(key): \(e.message)")
            }
        }
        func string(_ key: String) throws -> String {
            guard let s = json[key]?.stringValue, !s.isEmpty else { throw EmulatorSchemaError("\(place) (\(canonical)) needs a string \"\(key)\"") }
            return s
        }
        var allowed: Set<String> = ["step"]
        let kind: Kind
        switch canonical {
        case "Set Variable":
            allowed.formUnion(["name", "value"])
            let name = try string("name")
            guard name.hasPrefix("$"), name.count > 1 else { throw EmulatorSchemaError("\(place).name must start with $") }
            kind = .setVariable(name.lowercased(), try expr("value") ?? .literal(.text("")))
        case "Set Field":
            allowed.formUnion(["field", "value"])
            let (field, rep) = try fieldAndRepetition(try string("field"), place: place)
            kind = .setField(field, repetition: rep, try expr("value") ?? .literal(.text("")))
        case "New Record": kind = .newRecord
        case "Delete Record": kind = .deleteRecord
        case "Duplicate Record": kind = .duplicateRecord
        case "Go to Layout":
            allowed.insert("layout")
            kind = .goToLayout(try string("layout"))
        case "Go to Record":
            allowed.formUnion(["which", "exitAfterLast"])
            let which = try string("which").lowercased()
            guard ["first", "last", "next", "previous"].contains(which) else {
                throw EmulatorSchemaError("\(place).which must be first, last, next or previous")
            }
            var exitAfterLast = false
            if let v = json["exitAfterLast"] {
                guard let b = v.boolValue else { throw EmulatorSchemaError("\(place).exitAfterLast must be true or false") }
                exitAfterLast = b
            }
            kind = .goToRecord(which, exitAfterLast: exitAfterLast)
        case "Perform Find":
            allowed.insert("query")
            kind = .performFind(try parseFindRequests(json["query"], place: place))
        case "Show All Records": kind = .showAllRecords
        case "Sort Records":
            allowed.insert("sort")
            kind = .sortRecords(try EmulatorSchema.parseSortKeys(json["sort"], place: "\(place).sort"))
        case "Loop":
            allowed.insert("steps")
            kind = .loop(try parseList(json["steps"] ?? .null, place: "\(place).steps"))
        case "Exit Loop If":
            allowed.insert("condition")
            kind = .exitLoopIf(try expr("condition") ?? .literal(.number(0)))
        case "If":
            allowed.formUnion(["condition", "steps", "else"])
            let elseSteps = try json["else"].map { try parseList($0, place: "\(place).else") } ?? []
            kind = .ifThen(try expr("condition") ?? .literal(.number(0)), try parseList(json["steps"] ?? .null, place: "\(place).steps"), elseSteps)
        case "Set Error":
            allowed.insert("code")
            kind = .setError(try expr("code") ?? .literal(.number(0)))
        case "Exit Script":
            allowed.insert("result")
            kind = .exitScript(try expr("result", required: false))
        case "Perform Script":
            allowed.formUnion(["script", "parameter"])
            kind = .performScript(try string("script"), try expr("parameter", required: false))
        default:
            allowed.formUnion(["text", "on"])
            kind = .nothing
        }
        for (k, _) in pairs where !allowed.contains(k) {
            throw EmulatorSchemaError("\(place): unknown key \"\(k)\" for step \(canonical)")
        }
        return ScriptStep(name: canonical, kind: kind)
    }

    /// Every layout, script and field name a step list refers to (checked by ``EmulatorSchema/validate()``).
    static func references(_ steps: [ScriptStep]) -> (layouts: [String], scripts: [String]) {
        var layouts: [String] = [], scripts: [String] = []
        for s in steps {
            switch s.kind {
            case let .goToLayout(l): layouts.append(l)
            case let .performScript(n, _): scripts.append(n)
            case let .loop(inner):
                let r = references(inner)
                layouts += r.layouts
                scripts += r.scripts
            case let .ifThen(_, a, b):
                let r = references(a + b)
                layouts += r.layouts
                scripts += r.scripts
            default: break
            }
        }
        return (layouts, scripts)
    }
}

extension EmulatorSchema {
    /// Parses sort keys: `["field", {"field": "year", "order": "descend"}]`.
    static func parseSortKeys(_ json: JSON?, place: String) throws -> [SortKey] {
        guard let json else { return [] }
        guard let items = json.arrayValue else { throw EmulatorSchemaError("\(place) must be an array of sort keys") }
        return try items.enumerated().map { i, item in
            if let s = item.stringValue { return SortKey(s) }
            guard let pairs = item.objectPairs, let field = item["field"]?.stringValue else {
                throw EmulatorSchemaError("\(place)[\(i)] must be a field name or {\"field\": …, \"order\": \"ascend\"|\"descend\"}")
            }
            for (k, _) in pairs where k != "field" && k != "order" {
                throw EmulatorSchemaError("\(place)[\(i)]: unknown key \"\(k)\"")
            }
            switch item["order"]?.stringValue?.lowercased() {
            case nil, "ascend"?: return SortKey(field)
            case "descend"?: return SortKey(field, ascending: false)
            default: throw EmulatorSchemaError("\(place)[\(i)].order must be \"ascend\" or \"descend\"")
            }
        }
    }
}

extension EmulatorSchema.Script {
    /// Creates a script from the JSON text of a `steps` array (see SCHEMA.md "Scripts with steps").
    /// - Throws: ``EmulatorSchemaError`` naming an unknown step or a malformed expression.
    public init(_ name: String, stepsJSON: String, layout: String? = nil) throws {
        let json: JSON
        do { json = try JSON.parse(Data(stepsJSON.utf8)) } catch { throw EmulatorSchemaError("script \(name): \(error)") }
        self.init(name, layout: layout)
        steps = try ScriptStep.parseList(json, place: "scripts.\(name).steps")
    }
}

// MARK: - Running

/// The state of one running schema script: its layout, found set, current record, variables and last error.
struct ScriptRun {
    var layout: EmulatorSchema.Layout
    var found: [Int]
    var index: Int
    /// Found sets left behind on other layouts (by occurrence), restored on returning to them.
    var parked: [String: ([Int], Int)] = [:]
    var variables: [String: ScriptValue] = [:]
    var lastError = "0"
    var parameter: String?
    var result: String?
    var subResult: String?
    var scriptName: String
    var session: String?
    var now: Date
    /// Steps left before the script is stopped (a runaway loop ends with error 1, "user canceled").
    var budget: Int
    var depth: Int

    var currentId: Int? { found.indices.contains(index) ? found[index] : nil }
}

/// How control leaves a block of steps.
enum ScriptFlow {
    case next, exitLoop, exitScript, halt
}

/// The scope an expression sees while a script runs.
struct ScriptRunScope: ScriptScope {
    let state: EmulatorState
    let run: ScriptRun

    func variable(_ name: String) -> ScriptValue { run.variables[name] ?? .text("") }

    func field(_ name: String, repetition: Int) -> ScriptValue {
        guard let t = state.occurrenceTable(run.layout.table), let id = run.currentId, let record = t.records[id] else { return .text("") }
        var bare = name
        if let r = name.range(of: "::") {
            let to = String(name[..<r.lowerBound])
            if to.caseInsensitiveCompare(run.layout.table) != .orderedSame {
                guard let rf = state.relatedField(name, from: run.layout.table, layout: run.layout) else { return .text("") }
                return ScriptRunScope.convert(state.relatedValue(rf, of: record, table: t.schema.name, repetition: repetition,
                                                                 session: run.session), type: rf.field.type)
            }
            bare = String(name[r.upperBound...])
        }
        guard let f = t.field(bare) else { return .text("") }
        return ScriptRunScope.convert(state.value(of: f, table: t.schema.name, record: record, repetition: repetition, session: run.session),
                                      type: f.type)
    }

    static func convert(_ v: FMValue, type: EmulatorSchema.FieldType) -> ScriptValue {
        let text = v.text
        if type == .number, let n = Double(text) { return .number(n) }
        return .text(text)
    }

    func get(_ name: String) -> ScriptValue {
        switch name {
        case "scriptparameter": return .text(run.parameter ?? "")
        case "foundcount": return .number(Double(run.found.count))
        case "lasterror": return .number(Double(run.lastError) ?? 0)
        case "recordid": return run.currentId.map { .number(Double($0)) } ?? .text("")
        case "recordnumber": return run.currentId == nil ? .number(0) : .number(Double(run.index + 1))
        case "scriptresult": return .text(run.subResult ?? "")
        case "layoutname": return .text(run.layout.name)
        case "scriptname": return .text(run.scriptName)
        case "totalrecordcount": return .number(Double(state.occurrenceTable(run.layout.table)?.records.count ?? 0))
        default: return .text("")
        }
    }
}

extension EmulatorState {
    /// Runs a schema script's steps on `layout` with the found set `found` (current record: the first).
    mutating func runSteps(_ script: EmulatorSchema.Script, steps: [ScriptStep], param: String?, layout: EmulatorSchema.Layout,
                           found: [Int], current: Int?, session: String?, now: Date, depth: Int = 0) -> ScriptOutcome {
        let startLayout = script.layout.flatMap { self.layout($0) } ?? layout
        var foundSet = found
        if startLayout.table.caseInsensitiveCompare(layout.table) != .orderedSame {
            foundSet = occurrenceTable(startLayout.table)?.order ?? []
        }
        var run = ScriptRun(layout: startLayout, found: foundSet, index: current.flatMap { foundSet.firstIndex(of: $0) } ?? 0,
                            parameter: param, scriptName: script.name, session: session, now: now, budget: 100_000, depth: depth)
        _ = execute(steps, &run)
        return ScriptOutcome(result: run.result, error: run.lastError)
    }

    private mutating func execute(_ steps: [ScriptStep], _ run: inout ScriptRun) -> ScriptFlow {
        for step in steps {
            run.budget -= 1
            if run.budget < 0 {
                run.lastError = "1"
                return .halt
            }
            let flow = execute(step, &run)
            if flow != .next { return flow }
        }
        return .next
    }

    private func evaluate(_ e: ScriptExpr, _ run: ScriptRun) -> ScriptValue {
        e.evaluate(ScriptRunScope(state: self, run: run))
    }

    private mutating func execute(_ step: ScriptStep, _ run: inout ScriptRun) -> ScriptFlow {
        func fail(_ code: String) -> ScriptFlow { run.lastError = code; return .next }
        switch step.kind {
        case let .setVariable(name, e):
            run.variables[name] = evaluate(e, run)
            return .next
        case let .setField(name, rep, e):
            return setField(name, repetition: rep, e, &run)
        case .newRecord:
            return newRecord(&run)
        case .deleteRecord:
            guard occurrenceTable(run.layout.table) != nil, let id = run.currentId else { return fail("101") }
            do { try deleteCascading(occurrence: run.layout.table, id: id, session: run.session) } catch { return fail("101") }
            run.found.remove(at: run.index)
            if run.index >= run.found.count { run.index = max(0, run.found.count - 1) }
            run.lastError = "0"
            return .next
        case .duplicateRecord:
            guard let t = occurrenceTable(run.layout.table), let id = run.currentId else { return fail("101") }
            do {
                let newId = try duplicateRecord(table: t.schema.name, id: id, now: run.now)
                run.found.append(newId)
                run.index = run.found.count - 1
            } catch { return fail("101") }
            run.lastError = "0"
            return .next
        case let .goToLayout(name):
            return goToLayout(name, &run)
        case let .goToRecord(which, exitAfterLast):
            guard !run.found.isEmpty else { return fail("101") }
            switch which {
            case "first": run.index = 0
            case "last": run.index = run.found.count - 1
            // Past either end the step fails with 101 "Record is missing"; with "Exit after last" it also
            // leaves the loop, and 101 stays the script's last error (what the Data API answers as
            // `scriptError`: python-fmdata's integration suite, run against FileMaker Server, expects "101").
            case "previous":
                if run.index == 0 { run.lastError = "101"; return exitAfterLast ? .exitLoop : .next }
                run.index -= 1
            default:
                if run.index + 1 >= run.found.count { run.lastError = "101"; return exitAfterLast ? .exitLoop : .next }
                run.index += 1
            }
            run.lastError = "0"
            return .next
        case let .performFind(requests):
            return performFind(requests, &run)
        case .showAllRecords:
            run.found = occurrenceTable(run.layout.table)?.order ?? []
            run.index = 0
            run.lastError = "0"
            return .next
        case let .sortRecords(keys):
            guard let t = occurrenceTable(run.layout.table) else { return fail("106") }
            var resolved: [(EmulatorSchema.Field, Bool)] = []
            for k in keys {
                guard let f = t.field(Self.bareField(k.field)) else { return fail("102") }
                resolved.append((f, k.ascending))
            }
            let current = run.currentId
            run.found = sortRecords(run.found.compactMap { t.records[$0] }, by: resolved, table: t.schema.name, session: run.session).map(\.id)
            run.index = current.flatMap { run.found.firstIndex(of: $0) } ?? 0
            run.lastError = "0"
            return .next
        case let .loop(inner):
            while true {
                switch execute(inner, &run) {
                case .next: continue
                case .exitLoop: return .next
                case .exitScript: return .exitScript
                case .halt: return .halt
                }
            }
        case let .exitLoopIf(e):
            return evaluate(e, run).isTrue ? .exitLoop : .next
        case let .ifThen(condition, then, otherwise):
            return execute(evaluate(condition, run).isTrue ? then : otherwise, &run)
        case let .setError(e):
            let v = evaluate(e, run)
            run.lastError = v.numeric.map { JSON.format(number: $0) } ?? v.text
            return .next
        case let .exitScript(e):
            if let e { run.result = evaluate(e, run).text }
            return .exitScript
        case let .performScript(name, e):
            let param = e.map { evaluate($0, run).text }
            guard run.depth < 20 else { return fail("1") }
            let outcome = runScript(name, param: param, phase: "run", layout: run.layout, found: run.found, current: run.currentId,
                                    session: run.session, now: run.now, depth: run.depth + 1)
            run.subResult = outcome.result
            run.lastError = outcome.error
            return .next
        case .nothing:
            return .next
        }
    }

    /// `Set Field [name[rep]; e]` on the current record (a related field edits the first related record).
    private mutating func setField(_ name: String, repetition rep: Int, _ e: ScriptExpr, _ run: inout ScriptRun) -> ScriptFlow {
        func fail(_ code: String) -> ScriptFlow { run.lastError = code; return .next }
        let value = evaluate(e, run)
        guard let t = occurrenceTable(run.layout.table) else { return fail("106") }
        guard let id = run.currentId, let record = t.records[id] else { return fail("101") }
        do {
            if name.contains("::"), let r = name.range(of: "::"),
               name[..<r.lowerBound].caseInsensitiveCompare(run.layout.table) != .orderedSame {
                guard let rf = relatedField(name, from: run.layout.table, layout: run.layout) else { return fail("102") }
                try writeRelated(rf, repetition: rep, json: .string(value.text), from: record, table: t.schema.name,
                                 session: run.session, now: run.now, dateformats: 0)
            } else {
                guard let f = t.field(Self.bareField(name)) else { return fail("102") }
                guard rep <= f.repetitions else { return fail("111") }
                let v = try FMValue.parseOrThrow(value.text, field: f, dateformats: 0)
                _ = try editRecord(table: t.schema.name, id: id, writes: [Write(field: f, repetition: rep, value: v)],
                                   session: run.session, now: run.now, bump: !f.global)
            }
        } catch let e as FMError {
            return fail(e.code)
        } catch {
            return fail("-1")
        }
        run.lastError = "0"
        return .next
    }

    /// `New Record/Request`: a record with its auto-enter values, made current.
    private mutating func newRecord(_ run: inout ScriptRun) -> ScriptFlow {
        func fail(_ code: String) -> ScriptFlow { run.lastError = code; return .next }
        guard let key = occurrenceTable(run.layout.table)?.schema.name.lowercased(), var t = tables.removeValue(forKey: key) else {
            return fail("106")
        }
        // Like FileMaker, validation waits for the commit; the emulator does not model commits.
        var record = StoredRecord(id: t.nextId, modId: 0, values: [:])
        applyAutoEnter(&record, table: &t, now: run.now, creating: true)
        t.nextId += 1
        t.records[record.id] = record
        t.order.append(record.id)
        tables[key] = t
        run.found.append(record.id)
        run.index = run.found.count - 1
        run.lastError = "0"
        return .next
    }

    /// `Go to Layout [name]`: each layout's table keeps its own found set, as in FileMaker.
    private mutating func goToLayout(_ name: String, _ run: inout ScriptRun) -> ScriptFlow {
        func fail(_ code: String) -> ScriptFlow { run.lastError = code; return .next }
        guard let target = layout(name) else { return fail("105") }
        run.parked[run.layout.table.lowercased()] = (run.found, run.index)
        if let (found, index) = run.parked[target.table.lowercased()] {
            run.found = found
            run.index = index
        } else {
            run.found = occurrenceTable(target.table)?.order ?? []
            run.index = 0
        }
        run.layout = target
        run.lastError = "0"
        return .next
    }

    /// `Perform Find [requests]`: the found set of the layout's table (401 when empty).
    private mutating func performFind(_ requests: [(omit: Bool, criteria: [(String, ScriptStep.FindValue)])], _ run: inout ScriptRun) -> ScriptFlow {
        func fail(_ code: String) -> ScriptFlow { run.lastError = code; return .next }
        guard let t = occurrenceTable(run.layout.table) else { return fail("106") }
        var parsed: [(omit: Bool, criteria: [Criterion])] = []
        do {
            for request in requests {
                var criteria: [Criterion] = []
                for (key, value) in request.criteria {
                    let text: String
                    switch value {
                    case let .text(s): text = s
                    case let .calc(e): text = evaluate(e, run).text
                    }
                    guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
                    criteria.append(try resolveCriterion(key, text: text, layout: run.layout, table: t))
                }
                parsed.append((request.omit, criteria))
            }
        } catch let e as FMError {
            return fail(e.code)
        } catch {
            return fail("-1")
        }
        guard parsed.contains(where: { !$0.criteria.isEmpty }) else { return fail("400") }
        let engine = FindEngine(today: FMDate(run.now), dateformats: 0)
        let all = t.orderedRecords
        var hits = Set<Int>()
        for (i, request) in parsed.enumerated() where !request.criteria.isEmpty {
            if i == 0, request.omit { hits = Set(all.map(\.id)) }
            let matched = all.filter { record($0, in: t, matches: request.criteria, engine: engine, session: run.session) }.map(\.id)
            if request.omit { hits.subtract(matched) } else { hits.formUnion(matched) }
        }
        run.found = t.order.filter { hits.contains($0) }
        run.index = 0
        run.lastError = run.found.isEmpty ? "401" : "0"
        return .next
    }
}
