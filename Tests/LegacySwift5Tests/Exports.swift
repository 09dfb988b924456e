// Compiled in Swift 5 language mode (see Package.swift): the same call sites an app still on Swift 5 has.
// The one file a ported app adds after deleting its copy of DataAPI.swift (or the SwiftFM 2.x package).
@_exported import SwiftFM
