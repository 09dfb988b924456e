import Foundation

/// The pages of an OData read, as an `AsyncSequence` of ``FMODataPage`` (``FMOData/pages(from:query:)``).
///
/// The first page is read with the query; each next one at the previous page's `@odata.nextLink`, only
/// when the loop asks for it, so one page is held at a time. The sequence ends after the page without a
/// next link (an empty result is a sequence of no pages). A failed page throws its ``FMError`` once and
/// ends the sequence; cancelling the task cancels the page in flight (`"-1005"`). A server that answers
/// a next link leading where the walk already went (A → A, or a longer cycle A → B → A, the first page
/// included, however the link is spelled) ends it with `-1007` instead of looping.
public struct FMODataPages: AsyncSequence, Sendable {
    /// A page.
    public typealias Element = FMODataPage

    let odata: FMOData
    let set: String
    let query: FMODataQuery

    /// Starts a walk from the first page.
    public func makeAsyncIterator() -> Iterator {
        Iterator(odata: odata, set: set, query: query)
    }

    /// Reads the pages of one walk, one per call of ``next()``.
    public struct Iterator: AsyncIteratorProtocol {
        enum Step {
            case first
            case link(URL)
            case done

            /// The step after a page read at this one: its next link, else done; `nil` when an empty last
            /// page ends the walk without being handed out. `followed` holds where the walk went
            /// (``FMOData/walkTarget(_:)``): a next link leading to one of those is a loop (A → A, or A → B → A)
            /// and fails. `requestID`: the number of the page's call, and `logContext` the caller's logging context (its
            /// line then names the one and carries the other).
            func after(nextLink: URL?, rowCount: Int, odata: FMOData, followed: inout Set<String>,
                       requestID: UInt64?, logContext: [String: String]) throws(FMError) -> Step? {
                guard let next = nextLink else { return rowCount == 0 ? nil : .done }
                let call = odata.pageCall(following: next)
                if let target = odata.walkTarget(call), !followed.insert(target).inserted {
                    throw odata.walkLooped(call, requestID: requestID, logContext: logContext)
                }
                return .link(next)
            }
        }

        let odata: FMOData
        let set: String
        let query: FMODataQuery
        var step = Step.first
        /// Where the walk went so far, the first page included (a next link leading there again is a loop).
        var followed: Set<String>

        init(odata: FMOData, set: String, query: FMODataQuery) {
            self.odata = odata
            self.set = set
            self.query = query
            followed = Set([odata.walkTarget(odata.pageCall(from: set, query: query))].compactMap { $0 })
        }

        /// The next page, or `nil` after the last one (and after a failure was thrown once).
        /// - Throws: ``FMError`` for a failed page (`"-1005"` when the task was cancelled).
        public mutating func next() async throws -> FMODataPage? {
            let current = step
            step = .done   // a failure ends the walk: it is thrown once
            if case .done = current { return nil }
            if Task.isCancelled { throw FMError.cancelled }
            let call: ODataCall<FMODataPage>
            switch current {
            case .done: return nil
            case .first: call = odata.pageCall(from: set, query: query)
            case .link(let link): call = odata.pageCall(following: link)
            }
            let sent = odata.walkRequestHolder()
            let logContext = odata.api.context.callerLogContext()   // in the looping task
            let page = try await odata.sendAsync(call, sentAs: sent, logContext: logContext)
            guard let after = try current.after(nextLink: page.nextLink, rowCount: page.rows.count, odata: odata, followed: &followed,
                                                requestID: sent?.value, logContext: logContext)
            else { return nil }
            step = after
            return page
        }
    }
}

extension FMOData {
    /// Where a page call leads, as the engine sends it (`{database}/{set}?…`, whatever the next link's spelling:
    /// relative or absolute, host case, default port, fragment): the walks compare next links by it. `nil` for
    /// a call that fails before it is sent (its error ends the walk).
    func walkTarget(_ call: ODataCall<FMODataPage>) -> String? {
        guard call.invalid == nil else { return nil }
        return call.rooted ? call.path : ODataText.encodePath(configuration.database) + (call.path.isEmpty ? "" : "/" + call.path)
    }

    /// What holds the number of a walk page's request, for the line of a walk that page ends (``walkLooped(_:requestID:logContext:)``):
    /// made only when that line can be logged, so that a walk without a logging hook allocates nothing for it.
    func walkRequestHolder() -> Locked<UInt64?>? {
        api.context.sender.logger.isEnabled(.error) ? Locked(nil) : nil
    }

    /// The error of a walk whose next link leads where it already went (`call`: the page call it would make), logged
    /// once, at error (``Logger/logCallFailed(_:_:layout:requestID:)``): the page that sent the link was answered, so
    /// no line of its own says the walk failed. `requestID`: the number of that page's call (the `fm.request_id` of
    /// its own `→` and `←` lines and its span), which the line carries as every call's failure line does; `logContext`:
    /// the caller's logging context, read as the walk (or the page, for the async sequence) began.
    func walkLooped(_ call: ODataCall<FMODataPage>, requestID: UInt64?, logContext: [String: String]) -> FMError {
        let error = FMError.malformed("the server sent a next link the walk already followed", status: nil)
        let logger = api.context.sender.logger
        if logger.isEnabled(.error) {
            logger.logCallFailed("\(call.method.rawValue) odata/\(call.kind)", error, requestID: requestID, context: logContext)
        }
        return error
    }

    /// The pages of `set` that match `query`, following `@odata.nextLink`, as an `AsyncSequence`.
    ///
    /// Nothing is sent until the loop asks for the first page; see ``FMODataPages``. `query.top` bounds the
    /// whole walk (FileMaker pages within it); use `Prefer`-free server paging for large tables.
    ///
    /// ```swift
    /// for try await page in odata.pages(from: "Artists", query: FMODataQuery(filter: .eq("city", "Austin"))) {
    ///     for row in page.rows { … }
    /// }
    /// ```
    public func pages(from set: String, query: FMODataQuery = FMODataQuery()) -> FMODataPages {
        FMODataPages(odata: self, set: set, query: query)
    }

    /// Walks the pages of `set` that match `query`, following `@odata.nextLink`: `page` runs on
    /// ``callbackQueue`` for each page (return `false` to stop), then `completion` once with the number of
    /// rows read and the code (`"0"` at the end or when `page` stopped the walk).
    /// - Parameters:
    ///   - set: the entity set name.
    ///   - query: the filter, fields, sort, window and expansions of the walk.
    ///   - page: called with each page in order; `false` stops the walk.
    ///   - completion: the rows read or `nil`, and the code.
    /// - Returns: a handle to cancel the walk (the completion then gets `"-1005"`).
    @discardableResult
    public func forEachPage(from set: String, query: FMODataQuery = FMODataQuery(), page: sending @escaping (FMODataPage) -> Bool,
                            completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        let handle = FMRequest()
        let first = pageCall(from: set, query: query)
        // Read here, where the caller is: the next pages are requested from the callback queue.
        walk(first, followed: Set([walkTarget(first)].compactMap { $0 }), rows: 0, handle: handle, logContext: api.context.callerLogContext(),
             page: page, completion: completion)
        return handle
    }

    private func walk(_ call: ODataCall<FMODataPage>, followed: Set<String>, rows: Int, handle: FMRequest, logContext: [String: String],
                      page: @escaping (FMODataPage) -> Bool, completion: @escaping (Int?, String) -> Void) {
        let sent = walkRequestHolder()
        send(call, attachingTo: handle, sentAs: sent, logContext: logContext) { [self] result in
            switch result {
            case .failure(let error):
                completion(nil, error.code)
            case .success(let current):
                let total = rows + current.rows.count
                if current.rows.isEmpty, current.nextLink == nil { return completion(total, "0") }
                guard page(current), let next = current.nextLink else { return completion(total, "0") }
                if handle.isCancelled {
                    return FMError.withCurrent(.cancelled) { completion(nil, FMError.ClientCode.cancelled) }
                }
                // A link leading where the walk went before (A → A, A → B → A) is a loop.
                let call = pageCall(following: next)
                var followed = followed
                if let target = walkTarget(call), !followed.insert(target).inserted {
                    let error = walkLooped(call, requestID: sent?.value, logContext: logContext)
                    return FMError.withCurrent(error) { completion(nil, error.code) }
                }
                walk(call, followed: followed, rows: total, handle: handle, logContext: logContext, page: page, completion: completion)
            }
        }
    }
}

/// The pages of an OData read decoded into `T`, as an `AsyncSequence` of ``FMODataTypedPage``
/// (``FMOData/pages(as:from:query:)``); it walks like ``FMODataPages``.
public struct FMODataTypedPages<T: Decodable & SendableMetatype>: AsyncSequence, Sendable {
    /// A typed page.
    public typealias Element = FMODataTypedPage<T>

    let odata: FMOData
    let set: String
    let query: FMODataQuery

    /// Starts a walk from the first page.
    public func makeAsyncIterator() -> Iterator {
        Iterator(odata: odata, set: set, query: query)
    }

    /// Reads the pages of one walk, one per call of ``next()``.
    public struct Iterator: AsyncIteratorProtocol {
        let odata: FMOData
        let set: String
        let query: FMODataQuery
        var step = FMODataPages.Iterator.Step.first
        /// Where the walk went so far, the first page included (a next link leading there again is a loop).
        var followed: Set<String>

        init(odata: FMOData, set: String, query: FMODataQuery) {
            self.odata = odata
            self.set = set
            self.query = query
            followed = Set([odata.walkTarget(odata.pageCall(from: set, query: query))].compactMap { $0 })
        }

        /// The next page, or `nil` after the last one (and after a failure was thrown once).
        /// - Throws: ``FMError`` for a failed page (`"-1007"` when a row does not decode, `"-1005"` when the
        ///   task was cancelled).
        public mutating func next() async throws -> FMODataTypedPage<T>? {
            let current = step
            step = .done
            if case .done = current { return nil }
            if Task.isCancelled { throw FMError.cancelled }
            let call: ODataCall<FMODataTypedPage<T>>
            switch current {
            case .done: return nil
            case .first: call = odata.typedPageCall(T.self, odata.pageCall(from: set, query: query))
            case .link(let link): call = odata.typedPageCall(T.self, odata.pageCall(following: link))
            }
            let odata = self.odata
            let sent = odata.walkRequestHolder()
            let logContext = odata.api.context.callerLogContext()   // in the looping task
            let page = try await odata.sendAsync(call, sentAs: sent, logContext: logContext)
            guard let after = try current.after(nextLink: page.nextLink, rowCount: page.rows.count, odata: odata, followed: &followed,
                                                requestID: sent?.value, logContext: logContext)
            else { return nil }
            step = after
            return page
        }
    }
}

extension FMOData {
    /// The pages of `set` that match `query`, each decoded into `T` with FileMaker's rules, following
    /// `@odata.nextLink`, as an `AsyncSequence` (see ``pages(from:query:)``).
    public func pages<T: Decodable & SendableMetatype>(as type: T.Type, from set: String,
                                                      query: FMODataQuery = FMODataQuery()) -> FMODataTypedPages<T> {
        FMODataTypedPages(odata: self, set: set, query: query)
    }
}
