// The built-in demo solution, embedded so that `Emulator()` works even where the resource bundle
// cannot be found (an `fm-emulator` binary copied elsewhere: SwiftPM's `Bundle.module` accessor traps
// then). It must stay identical to Resources/demo-schema.json; SchemaTests checks that.

extension EmulatorSchema {
    /// The text of Resources/demo-schema.json.
    static let demoSchemaText = #"""
{
  "database": "Music",
  "accounts": [
    { "username": "admin", "password": "admin" },
    { "username": "guest", "password": "guest" }
  ],
  "tables": {
    "Artists": {
      "fields": {
        "id":       { "type": "number", "autoEnter": "serial" },
        "name":     { "type": "text", "notEmpty": true },
        "city":     "text",
        "born":     "date",
        "rating":   "number",
        "lastSeen": "timestamp",
        "alarm":    "time",
        "headshot": "container",
        "tags":     { "type": "text", "repetitions": 3 },
        "g_note":   { "type": "text", "global": true },
        "created":  { "type": "timestamp", "autoEnter": "creationTimestamp" }
      }
    },
    "Albums": {
      "fields": {
        "id":        { "type": "number", "autoEnter": "serial" },
        "artist_id": "number",
        "title":     { "type": "text", "notEmpty": true },
        "year":      "number",
        "cover":     "container"
      }
    }
  },
  "layouts": {
    "Artists": {
      "table": "Artists",
      "fields": ["id", "name", { "name": "city", "valueList": "Cities", "displayType": "popupList" }, "born", "rating",
                 "lastSeen", "alarm", "headshot", "tags", "g_note", "created"],
      "portals": {
        "albums": { "table": "Albums", "match": { "id": "artist_id" }, "fields": ["id", "title", "year"] }
      },
      "valueLists": { "Cities": ["Austin", "Dallas", "Houston", "Nashville"] }
    },
    "Artist List": { "table": "Artists", "fields": ["id", "name", "city"] },
    "Albums": { "table": "Albums", "fields": ["id", "artist_id", "title", "year", "cover"] },
    "Album Detail / Print": { "table": "Albums", "fields": ["artist_id", "title", "year"] },
    "Reports": { "folder": true, "layouts": ["Album Detail / Print", "Archive"] },
    "Archive": { "folder": true, "layouts": ["Artist List"] }
  },
  "scripts": {
    "Echo":          { "returns": "parameter" },
    "Fail":          { "error": "3" },
    "Count Artists": { "returns": "foundCount", "layout": "Artists" },
    "Hello":         { "returns": "Hello from the emulator" },
    "Utilities":     { "folder": true, "scripts": ["Count Artists", "-", "Hello"] }
  },
  "records": {
    "Artists": [
      { "name": "Brian Eno", "city": "Austin", "born": "05/15/1948", "rating": 5, "alarm": "07:30:00", "tags": "ambient", "tags(2)": "producer" },
      { "name": "Kate Bush", "city": "Dallas", "born": "07/30/1958", "rating": 5, "lastSeen": "11/02/2024 20:15:00" },
      { "name": "Pinkish Black", "city": "Dallas", "born": "", "rating": 4 },
      { "name": "Townes Van Zandt", "city": "Houston", "born": "03/07/1944", "rating": 5, "tags": "folk" },
      { "name": "Emmylou Harris", "city": "Nashville", "born": "04/02/1947", "rating": 4.5 }
    ],
    "Albums": [
      { "artist_id": 1, "title": "Music for Airports", "year": 1978 },
      { "artist_id": 1, "title": "Another Green World", "year": 1975 },
      { "artist_id": 2, "title": "Hounds of Love", "year": 1985 },
      { "artist_id": 3, "title": "Razed to the Ground", "year": 2015 },
      { "artist_id": 3, "title": "Concept Unification", "year": 2018 },
      { "artist_id": 4, "title": "Live at the Old Quarter", "year": 1977 }
    ]
  },
  "limits": { "maxSessions": 100, "sessionIdleSeconds": 900 }
}
"""#
}
