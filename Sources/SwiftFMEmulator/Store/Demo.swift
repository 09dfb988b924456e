import Foundation

extension EmulatorSchema {
    /// The built-in demo solution (database `Music`), the same as the bundled `demo-schema.json`:
    /// Artists (serial id, required name, a value list, date/time/timestamp, a container, a repeating
    /// field, a global) with their albums in a portal, a layout folder, a layout named
    /// `Album Detail / Print`, and scripts `Echo`, `Fail`, `Count Artists`, `Hello`.
    public static var demo: EmulatorSchema {
        // The embedded text is valid (SchemaTests reads it); an empty `Music` only keeps this non-throwing.
        (try? EmulatorSchema(jsonData: Data(demoSchemaText.utf8))) ?? EmulatorSchema(database: "Music", tables: [], layouts: [])
    }

    /// Loads the bundled `demo-schema.json` resource through `Bundle.module`, throwing if it is invalid.
    /// (`Bundle.module` traps when the resource bundle is missing; prefer ``demo``.)
    public static func loadDemo() throws -> EmulatorSchema {
        guard let url = Bundle.module.url(forResource: "demo-schema", withExtension: "json") else {
            throw EmulatorSchemaError("the bundled demo-schema.json is missing")
        }
        return try load(from: url)
    }
}
