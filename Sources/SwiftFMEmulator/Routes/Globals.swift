import Foundation

extension EmulatorState {
    /// E17: `PATCH /databases/{db}/globals` — `Table::field` names only (Claris: "you must use the fully
    /// qualified field name, table-name::field-name"; a bare name is 102 "Field is missing"); per session.
    mutating func setGlobals(_ ctx: inout RequestContext) throws -> Reply {
        guard let g = ctx.body["globalFields"] else { throw FMError("958") }
        guard let pairs = g.objectPairs else { throw FMError("1708") }
        var writes: [(String, EmulatorSchema.Field, Int, FMValue)] = []
        for (key, json) in pairs {
            let (base, rep) = splitRepetition(key)
            var candidates: [(TableState, String)] = []
            if let r = base.range(of: "::") {
                guard let t = table(String(base[..<r.lowerBound])) else { throw FMError("102") }
                candidates = [(t, String(base[r.upperBound...]))]
            } else {
                throw FMError("102")
            }
            guard let (t, field) = candidates.lazy.compactMap({ t, name in t.field(name).flatMap { $0.global ? (t, $0) : nil } }).first else {
                throw FMError("102")
            }
            guard rep >= 1, rep <= field.repetitions else { throw FMError("111") }
            if json.isNull { throw FMError("1708") }
            guard let text = json.scalarText else { throw FMError("1708") }
            writes.append((t.schema.name, field, rep, try FMValue.parseOrThrow(text, field: field, dateformats: 0)))
        }
        for (t, f, rep, v) in writes {
            setGlobal(table: t, field: f, repetition: rep, value: v, session: ctx.token)
        }
        return Reply(response: .object([]))
    }
}
