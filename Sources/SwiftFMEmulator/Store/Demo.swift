import Foundation

extension EmulatorSchema {
    /// The built-in demo solution (database `Music`), loaded from the bundled `demo-schema.json`:
    /// Artists (serial id, required name, a value list, date/time/timestamp, a container, a repeating
    /// field, a global) with their albums in a portal, a layout folder, a layout named
    /// `Album Detail / Print`, and scripts `Echo`, `Fail`, `Count Artists`, `Hello`.
    public static var demo: EmulatorSchema {
        if let url = Bundle.module.url(forResource: "demo-schema", withExtension: "json"),
           let data = try? Data(contentsOf: url), let schema = try? EmulatorSchema(jsonData: data) {
            return schema
        }
        return minimalDemo
    }

    /// A tiny in-code stand-in used only if the bundled demo file cannot be read.
    static var minimalDemo: EmulatorSchema {
        EmulatorSchema(database: "Music",
                       tables: [Table("Artists", fields: [Field("id", .number, autoEnter: .serial(start: 1)), Field("name", .text)])],
                       layouts: [Layout("Artists", table: "Artists", fields: ["id", "name"])],
                       scripts: [Script("Echo", returns: .parameter)])
    }

    /// Loads the bundled demo schema, throwing if it is missing or invalid (used by tests).
    public static func loadDemo() throws -> EmulatorSchema {
        guard let url = Bundle.module.url(forResource: "demo-schema", withExtension: "json") else {
            throw EmulatorSchemaError("the bundled demo-schema.json is missing")
        }
        return try load(from: url)
    }
}
