import Foundation

// SwiftFM 2.x (2022, tags 2.2.0 … 2.3.2): the static async surface `SwiftFM.newSession()`,
// `SwiftFM.getRecords(…)` and so on, configured by `fm-host`, `fm-db`, `fm-auth` and `fm-token`.
// Each function is a projection of the same core as `DataAPI` (through the legacy bridge), resumed
// with `withCheckedContinuation` and cancelled with its task (`cancellable`); nothing is printed (the original
// printed tokens to the console).
//
// Differences from the original: the functions that return nil/false also do so for every failure
// the original silently swallowed; `deleteSession` always calls its completion (the original returned
// without calling it when the configuration or the network failed); the throwing fetches throw
// ``FMError`` (with the FileMaker or client-side code) instead of the package-internal error enum;
// `newSession` also writes `fm-token-expiry`, so 2018–2019 `isActiveToken()` callers can be mixed in;
// names with spaces or slashes are percent-encoded; `fm-host` may be `http://host:port`.

/// The SwiftFM 2.x static API (2022): async functions over the FileMaker Data API.
open class SwiftFM {
    // MARK: Sessions

    /// SwiftFM 2.x: logs in with `fm-auth` (base64 `user:pass`); writes `fm-token` (and `fm-token-expiry`); nil on failure.
    open class func newSession() async -> String? {
        guard let auth = LegacyEnvironment.defaults.string(forKey: LegacyKey.auth), !auth.isEmpty else { return nil }
        return await cancellable(ifCancelled: { warnFailure("newSession()", .cancelled, call: nil); return nil }) { continuation, handle in
            DataAPI.legacyLogin(auth: auth, era: .hostAndDatabase, handle: handle) { token, _, code, message in
                if token == nil { warnFailure("newSession()", FMError.current ?? FMError(code: code, message: message)) }
                continuation.resume(returning: token)
            }
        }
    }

    /// SwiftFM 2.x: `true` when `GET /validateSession` accepts `token`.
    open class func validateSession(token: String) async -> Bool {
        await legacyAsync(.validate, token: token) { $0.isSuccess }
    }

    /// SwiftFM 2.x: logs out; on success clears `fm-token`. The completion is always called (background queue).
    open class func deleteSession(token: String, completion: sending @escaping (Bool) -> Void) {
        DataAPI.legacyLogout(token: token, era: .hostAndDatabase) { code, _ in completion(code == "0") }
    }

    // MARK: Records

    /// SwiftFM 2.x: creates a record (`["fieldData": …]`, or an empty record for nil); returns its `recordId`.
    nonisolated(nonsending)
    open class func createRecord(layout: String, payload: [String: Any]?, token: String) async -> String? {
        let body = payload ?? ["fieldData": [String: Any]()]
        return await legacyAsync(.create(layout: layout, payload: body), token: token) { outcome in
            outcome.isSuccess ? LegacyEnvironment.string(outcome.response["recordId"]) : nil
        }
    }

    /// SwiftFM 2.x: duplicates a record; returns the new `recordId`.
    open class func duplicateRecord(id: Int, layout: String, token: String) async -> String? {
        await legacyAsync(.duplicate(layout: layout, recordId: id), token: token) { outcome in
            outcome.isSuccess ? LegacyEnvironment.string(outcome.response["recordId"]) : nil
        }
    }

    /// SwiftFM 2.x: edits a record (`["fieldData": …]`, optionally `"modId"`); returns the new `modId`.
    nonisolated(nonsending)
    open class func editRecord(id: Int, layout: String, payload: [String: Any], token: String) async -> String? {
        await legacyAsync(.edit(layout: layout, recordId: id, payload: payload, modId: nil), token: token) { outcome in
            outcome.isSuccess ? LegacyEnvironment.string(outcome.response["modId"]) : nil
        }
    }

    /// SwiftFM 2.x: deletes a record; `true` on success.
    open class func deleteRecord(id: Int, layout: String, token: String) async -> Bool {
        await legacyAsync(.delete(layout: layout, recordId: id), token: token) { $0.isSuccess }
    }

    /// SwiftFM 2.x: a find (`["query": …]`); the records re-serialised as JSON, and `dataInfo`. Throws ``FMError``.
    nonisolated(nonsending)
    open class func query(layout: String, payload: [String: Any], token: String) async throws -> (Data, FMResult.DataInfo) {
        try await fetch(.find(layout: layout, payload: payload), token: token, single: false)
    }

    /// SwiftFM 2.x: up to `limit` records sorted by `sortField`, with `portal` (or none); records as JSON, and `dataInfo`.
    open class func getRecords(
        layout: String, limit: Int, sortField: String, ascending: Bool, portal: String?, token: String
    ) async throws -> (Data, FMResult.DataInfo) {
        let sort: [[String: String]] = [["fieldName": sortField, "sortOrder": ascending ? "ascend" : "descend"]]
        let portals: [String] = portal.map { [$0] } ?? []
        let extra = [
            URLQueryItem(name: "_sort", value: jsonText(sort)),
            URLQueryItem(name: "portal", value: jsonText(portals)),
        ]
        return try await fetch(
            .getRecords(layout: layout, offset: nil, limit: limit, extra: extra), token: token, single: false)
    }

    /// SwiftFM 2.x: one record as JSON, and `dataInfo`; an empty answer throws `-1008`.
    open class func getRecord(id: Int, layout: String, token: String) async throws -> (Data, FMResult.DataInfo) {
        try await fetch(.getRecord(layout: layout, recordId: id), token: token, single: true)
    }

    /// SwiftFM 2.x: sets global fields (`["globalFields": …]`); `true` on success.
    nonisolated(nonsending)
    open class func setGlobals(payload: [String: Any], token: String) async -> Bool {
        await legacyAsync(.globals(payload: payload), token: token) { $0.isSuccess }
    }

    // MARK: Metadata

    /// SwiftFM 2.x: `GET /productInfo` (no token).
    open class func getProductInfo() async -> FMProduct.ProductInfo? {
        await legacyAsync(.productInfo) { decode(FMProduct.ProductInfo.self, $0, key: "productInfo") }
    }

    /// SwiftFM 2.x: `GET /databases` (no token).
    open class func getDatabases() async -> [FMDatabases.Database]? {
        await legacyAsync(.databases) { decode([FMDatabases.Database].self, $0, key: "databases") }
    }

    /// SwiftFM 2.x: the layouts and layout folders of the database.
    open class func getLayouts(token: String) async -> [FMLayouts.Layout]? {
        await legacyAsync(.layouts, token: token) { decode([FMLayouts.Layout].self, $0, key: "layouts") }
    }

    /// SwiftFM 2.x: the fields and value lists of a layout.
    open class func getLayoutMetadata(layout: String, token: String) async -> FMLayoutMetaData.Response? {
        await legacyAsync(.layoutMetadata(layout: layout), token: token) { decode(FMLayoutMetaData.Response.self, $0, key: nil) }
    }

    /// SwiftFM 2.x: the scripts and script folders of the database.
    open class func getScripts(token: String) async -> [FMScripts.Script]? {
        await legacyAsync(.scripts, token: token) { decode([FMScripts.Script].self, $0, key: "scripts") }
    }

    /// SwiftFM 2.x: runs a script on a layout with an optional parameter; `true` when the call succeeded.
    open class func executeScript(script: String, parameter: String?, layout: String, token: String) async -> Bool {
        await legacyAsync(.runScript(layout: layout, script: script, parameter: parameter), token: token) { $0.isSuccess }
    }

    /// SwiftFM 2.x: uploads the file at `filePath` into a container field; returns the file name.
    /// `inferType` infers the MIME type (from the bytes, then the extension), otherwise `application/octet-stream`.
    open class func setContainer(
        recordId: Int, layout: String, container: String, filePath: URL, inferType: Bool, token: String
    ) async -> String? {
        guard let data = try? Data(contentsOf: filePath) else { return nil }
        let fileName = filePath.lastPathComponent
        let mimeType: String? = inferType ? nil : "application/octet-stream"
        let call = LegacyCall.upload(
            layout: layout, recordId: recordId, field: container, fileName: fileName, mimeType: mimeType, data: data)
        return await legacyAsync(call, token: token) { $0.isSuccess ? fileName : nil }
    }
}

// MARK: - Bridging

extension SwiftFM {
    /// Sends one call through the legacy bridge and resumes with `project(outcome)`.
    nonisolated(nonsending)
    static func legacyAsync<T: Sendable>(
        _ call: LegacyCall, token: String = "", function: String = #function, _ project: @escaping (LegacyOutcome) -> T
    ) async -> T {
        await cancellable(ifCancelled: { warnFailure(function, .cancelled, call: nil); return project(LegacyOutcome(.failure(.cancelled))) }) { continuation, handle in
            DataAPI.legacySend(call, era: .hostAndDatabase, token: token, handle: handle) { outcome in
                if !outcome.isSuccess { warnFailure(function, outcome.error ?? FMError(code: outcome.code, message: outcome.message)) }
                continuation.resume(returning: project(outcome))
            }
        }
    }

    /// Runs the call `start` begins with the handle it is given (it returns that handle) and waits for it;
    /// cancelling the task cancels the call, which then ends at once with `-1005` (nothing is stored: a cancelled
    /// `newSession()` returns nil and writes no `fm-token`), as the original's `URLSession` request ended with its
    /// task. A task cancelled before the call sends nothing: the call returns `ifCancelled()` (what a cancelled
    /// call's outcome gives); one cancelled while the call starts reaches it through the handle, made first, and
    /// nothing is sent either.
    nonisolated(nonsending)
    static func cancellable<T: Sendable>(
        ifCancelled: () -> T, _ start: (CheckedContinuation<T, Never>, FMRequest) -> FMRequest
    ) async -> T {
        // Started, a fast answer could arrive before the cancel reached the call (and a login would store its token).
        if Task.isCancelled { return ifCancelled() }
        let handle = FMRequest()
        let latch = CancelLatch()
        latch.set(handle)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in _ = start(continuation, handle) }
        } onCancel: {
            latch.cancel()
        }
    }

    /// A 2.x call failed: its `nil`/`false` says nothing more, so the failure goes to ``DataAPI/legacyLogger``
    /// at warning, with the metadata of every failure line (``LegacyCallLog``): `fm.endpoint`, `fm.code`, `fm.layout`,
    /// `fm.request_id` and the caller's context, when the call got that far (a call cancelled before it began names
    /// only its code: `call` is `nil`). `call` is read in the call's completion, where ``LegacyScope/call`` is bound.
    static func warnFailure(_ function: String, _ error: FMError, call: LegacyCallLog? = LegacyScope.call) {
        guard let handler = LegacyState.shared.logger else { return }
        let metadata = call?.metadata(code: error.code) ?? ["fm.code": error.code]
        let none: @Sendable () -> [String] = { [] }
        Logger(handler: handler, secrets: call.map(\.secrets) ?? none).log(.warning, "SwiftFM 2.x \(function) failed: \(error)", metadata: metadata)
    }

    /// A record fetch: `response.data` re-serialised (all records, or the first when `single`) and `dataInfo`.
    nonisolated(nonsending)
    static func fetch(_ call: LegacyCall, token: String, single: Bool) async throws -> (Data, FMResult.DataInfo) {
        let result: Result<(Data, FMResult.DataInfo), FMError> = await legacyAsync(call, token: token) { outcome in
            guard outcome.isSuccess else {
                return .failure(FMError(code: outcome.code, message: outcome.message))
            }
            guard let records = outcome.records,
                  let info = decode(FMResult.DataInfo.self, outcome, key: "dataInfo")
            else { return .failure(.malformed("response.data or response.dataInfo is missing, or a count of dataInfo is negative", status: 200)) }
            let selected: Any
            if single {
                guard let first = records.first else { return .failure(.emptyResult) }
                selected = first
            } else {
                selected = records
            }
            guard let data = try? JSONSerialization.data(withJSONObject: selected) else {
                return .failure(.malformed("the records cannot be re-serialised", status: 200))
            }
            return .success((data, info))
        }
        return try result.get()
    }

    /// Decodes `response[key]` (or the whole `response`) of a successful outcome.
    static func decode<T: Decodable>(_ type: T.Type, _ outcome: LegacyOutcome, key: String?) -> T? {
        guard outcome.isSuccess else { return nil }
        let object: Any? = key.map { outcome.response[$0] } ?? outcome.response
        guard let object, JSONSerialization.isValidJSONObject(object),
              let data = try? JSONSerialization.data(withJSONObject: object)
        else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    /// Compact JSON text of a query parameter value.
    static func jsonText(_ value: Any) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: value) else { return "[]" }
        return String(decoding: data, as: UTF8.self)
    }
}
