import Foundation

extension EmulatorState {
    /// E1: `GET /productInfo`.
    func productInfo() -> Reply {
        Reply(response: .object([("productInfo", .object([
            ("name", .string("FileMaker Data API Engine")),
            ("buildDate", .string("07/12/2024")),
            ("version", .string("21.0.1.53")),
            ("dateFormat", .string("MM/dd/yyyy")),
            ("timeFormat", .string("HH:mm:ss")),
            ("timeStampFormat", .string("MM/dd/yyyy HH:mm:ss")),
        ]))]))
    }

    /// E2: `GET /databases` (database filtering off: no authentication).
    func databaseList() -> Reply {
        Reply(response: .object([("databases", .array([.object([("name", .string(schema.database))])]))]))
    }

    /// E6: `GET /databases/{db}/layouts` with nested folders.
    func layoutList() -> Reply {
        let folders = Dictionary(schema.layoutFolders.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        let nested = Set(schema.layoutFolders.flatMap { $0.items.map { $0.lowercased() } })
        func entry(_ name: String, depth: Int) -> JSON? {
            if let folder = folders[name.lowercased()] {
                let items = depth > 20 ? [] : folder.items.compactMap { entry($0, depth: depth + 1) }
                return .object([("name", .string(folder.name)), ("isFolder", .bool(true)), ("folderLayoutNames", .array(items))])
            }
            guard let l = layout(name) else { return nil }
            return .object([("name", .string(l.name)), ("table", .string(l.table))])
        }
        let order = schema.layoutOrder ?? (schema.layouts.map(\.name) + schema.layoutFolders.map(\.name))
        let top = order.filter { !nested.contains($0.lowercased()) }.compactMap { entry($0, depth: 0) }
        return Reply(response: .object([("layouts", .array(top))]))
    }

    /// E8: `GET /databases/{db}/scripts` with nested folders and `-` separators.
    func scriptList() -> Reply {
        let folders = Dictionary(schema.scriptFolders.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { a, _ in a })
        let nested = Set(schema.scriptFolders.flatMap { $0.items.map { $0.lowercased() } })
        func entry(_ name: String, depth: Int) -> JSON? {
            if let folder = folders[name.lowercased()] {
                let items = depth > 20 ? [] : folder.items.compactMap { entry($0, depth: depth + 1) }
                return .object([("name", .string(folder.name)), ("isFolder", .bool(true)), ("folderScriptNames", .array(items))])
            }
            if name == "-" { return .object([("name", .string("-")), ("isFolder", .bool(false))]) }
            guard let s = script(name) else { return nil }
            return .object([("name", .string(s.name)), ("isFolder", .bool(false))])
        }
        let order = schema.scriptOrder ?? (schema.scripts.map(\.name) + schema.scriptFolders.map(\.name))
        let top = order.filter { !nested.contains($0.lowercased()) }.compactMap { entry($0, depth: 0) }
        return Reply(response: .object([("scripts", .array(top))]))
    }

    /// E7: `GET /databases/{db}/layouts/{layout}`.
    func layoutMetadata(_ layout: EmulatorSchema.Layout, _ ctx: inout RequestContext) throws -> Reply {
        guard let table = table(layout.table) else { throw FMError("106") }
        if let rid = ctx.queryValue("recordId") {
            guard let id = Int(rid), table.records[id] != nil else { throw FMError("101") }
        }
        var fieldMeta: [JSON] = []
        for lf in layout.fields {
            if let rf = relatedLayoutField(layout, lf.name) {
                fieldMeta.append(EmulatorState.fieldMetadata(rf.field, name: rf.key, layoutField: lf))
                continue
            }
            guard let f = table.field(EmulatorState.bareField(lf.name)) else { continue }
            fieldMeta.append(EmulatorState.fieldMetadata(f, name: f.name, layoutField: lf))
        }
        var portalMeta: [(String, JSON)] = []
        for p in layout.portals {
            guard let path = portalPath(p, layout: layout) else { continue }
            let fields = portalColumns(p, path: path).map { EmulatorState.fieldMetadata($0.field, name: $0.key, layoutField: nil) }
            portalMeta.append((p.name, .array(fields)))
        }
        let valueLists: [JSON] = layout.valueLists.map { vl in
            .object([("name", .string(vl.name)), ("type", .string("customList")),
                     ("values", .array(vl.values.map { .object([("displayValue", .string($0)), ("value", .string($0))]) }))])
        }
        return Reply(response: .object([("fieldMetaData", .array(fieldMeta)), ("portalMetaData", .object(portalMeta)),
                                        ("valueLists", .array(valueLists))]))
    }

    static func fieldMetadata(_ f: EmulatorSchema.Field, name: String, layoutField: EmulatorSchema.LayoutField?) -> JSON {
        let result: String
        switch f.type {
        case .timestamp: result = "timeStamp"
        default: result = f.type.rawValue
        }
        var pairs: [(String, JSON)] = [
            ("name", .string(name)),
            ("type", .string("normal")),
            ("displayType", .string(layoutField?.displayType ?? (layoutField?.valueList != nil ? "popupList" : "editText"))),
            ("result", .string(result)),
        ]
        if let vl = layoutField?.valueList { pairs.append(("valueList", .string(vl))) }
        pairs += [
            ("global", .bool(f.global)),
            ("autoEnter", .bool(f.autoEnter != nil)),
            ("fourDigitYear", .bool(false)),
            ("maxRepeat", .number(Double(f.repetitions))),
            ("maxCharacters", .number(Double(f.maxCharacters))),
            ("notEmpty", .bool(f.notEmpty)),
            ("numeric", .bool(f.numericOnly)), // "strict data type: numeric only" (the XML grammar's `numeric-only`)
            ("timeOfDay", .bool(false)),
            ("repetitionStart", .number(1)),
            ("repetitionEnd", .number(Double(f.repetitions))),
        ]
        return .object(pairs)
    }
}
