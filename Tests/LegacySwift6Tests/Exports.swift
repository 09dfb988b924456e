// The one file a ported app adds after deleting its copy of DataAPI.swift (or the SwiftFM 2.x package).
@_exported import SwiftFM
