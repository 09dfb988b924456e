import Foundation

// The public calls: each a completion-handler form and an `async throws` twin over the same core.

extension FMOData {
    // MARK: metadata

    /// Reads the database's `$metadata` (JSON CSDL): entity sets and types, fields with their Edm and FileMaker
    /// types, keys, relationships and FileMaker's annotations.
    /// - Parameter completion: the metadata or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func metadata(completion: sending @escaping (FMODataMetadata?, String) -> Void) -> FMRequest {
        send(metadataCall()) { completion($0.value, $0.code) }
    }

    /// Reads the database's `$metadata`. Throws ``FMError``.
    public func metadata() async throws -> FMODataMetadata {
        try await sendAsync(metadataCall())
    }

    // MARK: reading

    /// Reads one page of `set` (`GET /{db}/{set}?$filter=…`): at most `query.top` rows, or the server's page
    /// (10,000 rows on FileMaker Server) with a ``FMODataPage/nextLink`` to the rest.
    /// - Parameters:
    ///   - set: the entity set (table occurrence) name, or its `FMTID:…`.
    ///   - query: the filter, fields, sort, window, count and expansions.
    ///   - completion: the page or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func records(from set: String, query: FMODataQuery = FMODataQuery(),
                        completion: sending @escaping (FMODataPage?, String) -> Void) -> FMRequest {
        send(pageCall(from: set, query: query)) { completion($0.value, $0.code) }
    }

    /// Reads one page of `set`. Throws ``FMError``.
    public func records(from set: String, query: FMODataQuery = FMODataQuery()) async throws -> FMODataPage {
        try await sendAsync(pageCall(from: set, query: query))
    }

    /// Reads one page of `set` decoded into `T` with FileMaker's rules (empty fields, numbers as text,
    /// dates, as ``DataAPI/getRecords(as:layout:offset:limit:sort:options:completion:)``).
    /// - Parameters:
    ///   - type: the row type; its coding keys are field names.
    ///   - set: the entity set name.
    ///   - query: the filter, fields, sort, window, count and expansions.
    ///   - completion: the typed page or `nil` (`-1007` when a row does not decode), and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func records<T: Decodable & SendableMetatype>(as type: T.Type, from set: String, query: FMODataQuery = FMODataQuery(),
                                                        completion: sending @escaping (FMODataTypedPage<T>?, String) -> Void) -> FMRequest {
        send(typedPageCall(type, pageCall(from: set, query: query))) { completion($0.value, $0.code) }
    }

    /// Reads one page of `set` decoded into `T`. Throws ``FMError``.
    public func records<T: Decodable & SendableMetatype>(as type: T.Type, from set: String,
                                                        query: FMODataQuery = FMODataQuery()) async throws -> FMODataTypedPage<T> {
        try await sendAsync(typedPageCall(type, pageCall(from: set, query: query)))
    }

    /// Reads the page at a ``FMODataPage/nextLink``. The link must be an OData URL on this client's server
    /// (same scheme, host and port), else the call completes with `-1007` and nothing is sent.
    /// - Parameters:
    ///   - nextLink: the link of the previous page.
    ///   - completion: the page or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func records(following nextLink: URL, completion: sending @escaping (FMODataPage?, String) -> Void) -> FMRequest {
        send(pageCall(following: nextLink)) { completion($0.value, $0.code) }
    }

    /// Reads the page at a ``FMODataPage/nextLink``. Throws ``FMError``.
    public func records(following nextLink: URL) async throws -> FMODataPage {
        try await sendAsync(pageCall(following: nextLink))
    }

    /// Reads one record by key (`GET /{db}/{set}({key})`); only `query`'s `select` and `expand` apply.
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the primary key's value, or the record's `ROWID`.
    ///   - query: the fields and expansions (other options are not sent).
    ///   - completion: the record's fields (annotations left out) or `nil` (`-1023` with HTTP 404 when there
    ///     is no such record), and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func record(from set: String, key: FMODataKey, query: FMODataQuery = FMODataQuery(),
                       completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(recordCall(from: set, key: key, query: query)) { completion($0.value, $0.code) }
    }

    /// Reads one record by key. Throws ``FMError``.
    public func record(from set: String, key: FMODataKey, query: FMODataQuery = FMODataQuery()) async throws -> [String: Any] {
        try await sendAsync(recordCall(from: set, key: key, query: query))
    }

    /// Counts the records of `set` that match `filter` (`GET /{db}/{set}/$count`). A server that refuses the
    /// `$count` path with HTTP 400 is asked once more with `$count=true&$top=1`.
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - filter: which records; `nil` for all.
    ///   - completion: the count or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func count(of set: String, filter: FMODataFilter? = nil, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        countResult(of: set, filter: filter, inline: false) { completion($0.value, $0.code) }
    }

    /// Counts the records of `set` that match `filter`. Throws ``FMError``.
    public func count(of set: String, filter: FMODataFilter? = nil) async throws -> Int {
        let handle = FMRequest()
        return try await api.bridge(attaching: handle) { completion in
            countResult(of: set, filter: filter, inline: true, handle: handle, completion: completion)
        }
    }

    private func countResult(of set: String, filter: FMODataFilter?, inline: Bool, handle: FMRequest = FMRequest(),
                             completion: @escaping (Result<Int, FMError>) -> Void) -> FMRequest {
        let done = ODataCompletion(run: completion)
        send(countCall(of: set, filter: filter, viaCollection: false), attachingTo: handle, inline: true) { [self] result in
            guard case .failure(let error) = result, error.httpStatus == 400, !handle.isCancelled else {
                if inline { return done.run(result) }
                let box = UncheckedBox(result)
                // Bound as the engine binds it: the completion reads the error behind its code.
                return callbackQueue.async { FMError.withCurrent(box.value.failure) { done.run(box.value) } }
            }
            send(countCall(of: set, filter: filter, viaCollection: true), attachingTo: handle, inline: inline, completion: done.run)
        }
        return handle
    }

    // MARK: writing

    /// Creates a record (`POST /{db}/{set}`) with `fields` (field name → value; `"name[2]"` for a
    /// repetition). Not retried (a write).
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - fields: the field values (JSON-serialisable: strings, numbers, `NSNull`).
    ///   - completion: the new record as FileMaker returned it (auto-entered values included, and its address:
    ///     `@odata.id` and `@odata.editLink`, `…/Artists(12)`, whose number is the ROWID of a record in a table
    ///     without a key, in either spelling the server used; other annotations left out; empty when the server
    ///     answered 204 without a body) or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func createRecord(in set: String, fields: [String: Any], completion: sending @escaping ([String: Any]?, String) -> Void) -> FMRequest {
        send(createCall(in: set, fields: fields)) { completion($0.value, $0.code) }
    }

    /// Creates a record; returns it as FileMaker returned it, with its `@odata.id` and `@odata.editLink`. Throws ``FMError``.
    @discardableResult
    public func createRecord(in set: String, fields: [String: Any]) async throws -> [String: Any] {
        try await sendAsync(createCall(in: set, fields: fields))
    }

    /// Changes fields of one record (`PATCH /{db}/{set}({key})`). Not retried (a write).
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - fields: the fields to change (others stay as they are).
    ///   - completion: the number of records changed (FileMaker's `fmodata.affected_rows`, else 1) or `nil`,
    ///     and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func updateRecord(in set: String, key: FMODataKey, fields: [String: Any],
                             completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        send(updateCall(in: set, key: key, fields: fields)) { completion($0.value, $0.code) }
    }

    /// Changes fields of one record; returns the number of records changed. Throws ``FMError``.
    @discardableResult
    public func updateRecord(in set: String, key: FMODataKey, fields: [String: Any]) async throws -> Int {
        try await sendAsync(updateCall(in: set, key: key, fields: fields))
    }

    /// Deletes one record (`DELETE /{db}/{set}({key})`). Not retried (a write).
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - key: the record's key.
    ///   - completion: the number of records deleted or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func deleteRecord(in set: String, key: FMODataKey, completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        send(deleteCall(in: set, key: key)) { completion($0.value, $0.code) }
    }

    /// Deletes one record; returns the number of records deleted. Throws ``FMError``.
    @discardableResult
    public func deleteRecord(in set: String, key: FMODataKey) async throws -> Int {
        try await sendAsync(deleteCall(in: set, key: key))
    }

    // MARK: scripts

    /// Runs a script (`POST /{db}/Script.{name}`), on the server without a layout or triggers. With no
    /// parameter the request has no body; else `{"scriptParameterValue": parameter}`. Not retried.
    ///
    /// The code is `"0"` when the call succeeded, even if the script failed: read
    /// ``FMODataScriptResult/code`` for the script's own error.
    /// - Parameters:
    ///   - script: the script name.
    ///   - parameter: the script parameter, or `nil`.
    ///   - completion: the script's code and result, or `nil`, and the code.
    /// - Returns: a handle to cancel the request.
    @discardableResult
    public func runScript(_ script: String, parameter: String? = nil,
                          completion: sending @escaping (FMODataScriptResult?, String) -> Void) -> FMRequest {
        send(scriptCall(script, parameter: parameter)) { completion($0.value, $0.code) }
    }

    /// Runs a script; a script error does not throw (read ``FMODataScriptResult/code``). Throws ``FMError``
    /// when the call itself fails.
    @discardableResult
    public func runScript(_ script: String, parameter: String? = nil) async throws -> FMODataScriptResult {
        try await sendAsync(scriptCall(script, parameter: parameter))
    }
}
