import Foundation

// Paging through a whole table or found set, one page per request.
//
// One place for the walk (`PageSource`): which request fetches page N, when the walk is over, and that
// FileMaker's "no records match" (401) and an empty page are the end of the set rather than an error.
// The callback form (`forEachPage`) and the async sequence (`pages`, in Async/Paging+Async.swift) only
// drive it.

/// What tells one record of a page apart from another in a walk's same-page check (``PageSource/next(after:at:previous:requestID:logContext:)``):
/// the one rule for raw and typed pages.
enum RecordKey {
    /// A record's key: its `recordId` when it has one that is not empty, else its content (`content`, made only
    /// then: a server that sends no ids, or empty ones, is not FileMaker, so this is rare and costs only then).
    static func key(id: String?, content: @autoclosure () -> String) -> String {
        if let id, !id.isEmpty { return id }
        return content()
    }

    /// A record's content as a key: the record as JSON with sorted keys, marked so that it is never a record id.
    /// A typed page keeps it for each record whose `recordId` is empty (``FMTypedFoundSet/contentKeys``), made from
    /// the same raw record while the answer is decoded.
    static func content(_ record: [String: Any]) -> String {
        guard JSONSerialization.isValidJSONObject(record),
              let data = try? JSONSerialization.data(withJSONObject: record, options: [.sortedKeys]) else { return "" }
        return "\u{0}" + String(decoding: data, as: UTF8.self)
    }

    /// Whether `key` names a record by its id (``key(id:content:)``), not by its content: only an id says that two
    /// records are the same record (two records may hold the same content).
    static func isID(_ key: String) -> Bool {
        !key.isEmpty && key.first != "\u{0}"
    }
}

/// Where the pages of one walk come from: the request for a window, and how to read a page's counts.
struct PageSource<Page>: Sendable {
    let api: DataAPI
    let pageSize: Int
    /// A client-side reason the walk cannot start (`-1002`), reported by the first page request.
    let invalid: FMError?
    /// The request for `limit` records starting at the 1-based `offset`.
    let endpoint: @Sendable (_ offset: Int, _ limit: Int) -> Endpoint<Page>
    /// The number of records in a page and the size of the found set (`dataInfo.foundCount`) when known.
    let counts: @Sendable (Page) -> (returned: Int, found: Int?)
    /// What tells each record of a page apart, in order (compared with the page before: see
    /// ``next(after:at:previous:requestID:logContext:)``): ``RecordKey/key(id:content:)``, for raw and typed pages alike.
    let ids: @Sendable (Page) -> [String]

    /// What a walk remembers of the page before: its record ids, and how often in a row it came back.
    struct Previous {
        var ids: [String]?
        var repeats = 0
    }

    /// Fetches the page at `offset`; `nil` means past the end of the set (the endpoint's "no records": 401,
    /// and 101 for a walk over a whole table, see ``NoRecords``; or an empty page). `completion` runs once,
    /// on the callback queue; `handle` carries cancellation across pages. `requestID`: the page call's number
    /// (``CallContext/newRequestID()``), drawn by the walk so that the line of a walk this page ends names it
    /// (``next(after:at:previous:requestID:logContext:)``). `logContext`: the caller's logging context read as the walk
    /// began (``CallOptions/logContext``; read as the page call begins when `nil`).
    ///
    /// The page is handed over, not shared (as ``Delivery`` hands a result): `completion` gets the only
    /// reference, so a page the caller drops is freed by the caller.
    @discardableResult
    func fetch(offset: Int, handle: FMRequest?, requestID: UInt64, logContext: [String: String]? = nil,
               completion: @escaping (consuming Result<Page?, FMError>) -> Void) -> FMRequest {
        if let invalid {
            // Refused before anything is sent, through the pipeline like any call refused so: one error line names
            // the call (`GET layouts/{}/records not sent: …`), and it is measured and traced.
            var refused = endpoint(offset, max(pageSize, 1))
            refused.invalid = invalid
            var options = CallOptions(accepting: { _ in false }, handle: handle)
            options.requestID = requestID
            options.logContext = logContext
            return api.perform(refused, options: options) { (result: consuming Result<Page, FMError>) in
                completion(.failure(result.failure ?? invalid))
            }
        }
        let endpoint = endpoint(offset, pageSize)
        var options = CallOptions(accepting: { $0 == 200 }, handle: handle)
        options.requestID = requestID
        options.logContext = logContext
        return api.perform(api.reading(endpoint), options: options) { [counts] (result: consuming Result<Page, FMError>) in
            if let error = result.failure {
                return completion(endpoint.meansNoRecords(error) ? .success(nil) : .failure(error))
            }
            var page = try? (consume result).get()
            if page.map({ counts($0).returned == 0 }) ?? true { return completion(.success(nil)) }
            completion(.success(page.take()))
        }
    }

    /// The offset of the page after `page` (fetched at `offset`), or `nil` when `page` was the last one: it
    /// reached the found count, or it was short and came without one. A short page whose found count says more
    /// records follow (a server or proxy that answers fewer records than asked for) is not the end: the walk goes
    /// on from the record after its last. `previous`: what the walk knows of the page before (updated).
    ///
    /// `-1007` (the page is not handed out) for a page that cannot be part of a walk: its records reach past
    /// its own found count (negative, zero, or fewer than the records it holds: the walk would have stopped
    /// as if the set were complete), or it is the same page again a third time in a row (a server or proxy that
    /// ignores `_offset`: the walk would never end). Once again is a walk: a page's worth of records created before
    /// the window meanwhile shifts the next page onto the last one.
    ///
    /// "The same page again" is decided page against page, never record against record: the whole page holds the
    /// same records in the same order as the page just before it (``RecordKey``), and something shows that they are
    /// the same records rather than records that look alike:
    /// - a record id (FileMaker sends one with every record): the same ids in the same order are the same records,
    ///   whatever the found count says;
    /// - records without one (no `recordId`, or `""`: not FileMaker) are known by their content only, and two records
    ///   may hold the same content. While the page's found count bounds the walk, equal content is taken for what it
    ///   may be, records that look alike: the offsets asked for advance with every page and stop at the found count,
    ///   and a server that ignores `_offset` is caught there when its page at the last offset reaches past the found
    ///   count. When the found count is a multiple of the page size it does not: that server's pages cannot be told
    ///   from a set of records that look alike, and the walk hands out the found count's worth of them and ends.
    ///   Without a found count nothing else would end the walk, and the same content a third time in a row
    ///   is the same page (`-1007`): a set whose full pages all hold the same id-less records is then
    ///   indistinguishable from a server that ignores `_offset`.
    ///
    /// The page's own call succeeded, so no line of its own says the walk failed: a `-1007` here is logged once, at
    /// error, naming the page's call (``logEnded(_:at:requestID:logContext:)``); `requestID` is that call's number and
    /// `logContext` the caller's context, as given to ``fetch(offset:handle:requestID:logContext:completion:)``.
    func next(after page: Page, at offset: Int, previous: inout Previous, requestID: UInt64,
              logContext: [String: String]) -> Result<Int?, FMError> {
        let result = nextOffset(after: page, at: offset, previous: &previous)
        if case .failure(let error) = result { logEnded(error, at: offset, requestID: requestID, logContext: logContext) }
        return result
    }

    /// The one line of a walk that a page it cannot use ended (``next(after:at:previous:requestID:logContext:)``): at error, named
    /// by the page's call, with `fm.code`, `fm.layout` and the page call's `fm.request_id` (the number on that page's
    /// own `→` and `←` lines and its span), as every call's failure line (``Logger/logCallFailed(_:_:layout:requestID:)``).
    private func logEnded(_ error: FMError, at offset: Int, requestID: UInt64, logContext: [String: String]) {
        let logger = api.context.sender.logger
        guard logger.isEnabled(.error) else { return }
        let call = endpoint(offset, pageSize)
        logger.logCallFailed(call.kind, error, layout: call.layout, requestID: requestID, context: logContext)
    }

    private func nextOffset(after page: Page, at offset: Int, previous: inout Previous) -> Result<Int?, FMError> {
        let (returned, found) = counts(page)
        if let found, returned > 0, offset > found || returned > found - offset + 1 {
            return .failure(.malformed("the page at offset \(offset) holds \(returned) records, past its own foundCount \(found)", status: 200))
        }
        // `returned` is at least 1 here (an empty page ended the walk in `fetch`), and at most what is left of
        // the found count (checked above): the walk moves on and never past the set.
        let next = offset + returned
        if returned < pageSize, found.map({ next > $0 }) ?? true { return .success(nil) }
        let current = ids(page)
        // Content alone (no record id on the page) proves a repeat only where no found count ends the walk.
        if previous.ids == current, current.count == returned, found == nil || current.contains(where: RecordKey.isID) {
            previous.repeats += 1
            if previous.repeats >= 2 {
                return .failure(.malformed("the page at offset \(offset) holds the records of the two pages before it (the server "
                                           + "ignores _offset)", status: 200))
            }
        } else {
            previous = Previous(ids: current)
        }
        if let found, next > found { return .success(nil) }
        return .success(next)
    }
}

extension PageSource {
    /// The request of one page of a walk over `layout`: a range request (`find == nil`) or a find.
    static func make<V>(api: DataAPI, layout: String, find: FMFindRequest?, pageSize: Int, sort: [FMSort],
                        options: FMReadOptions,
                        range: @escaping @Sendable (_ offset: Int, _ limit: Int, _ sort: [FMSort], _ options: FMReadOptions) -> Endpoint<V>,
                        found: @escaping @Sendable (_ request: FMFindRequest) -> Endpoint<V>,
                        counts: @escaping @Sendable (V) -> (returned: Int, found: Int?),
                        ids: @escaping @Sendable (V) -> [String]) -> PageSource<V> {
        let invalid: FMError? = pageSize < 1 ? .invalidArgument("The page size must be 1 or more (got \(pageSize))")
            : layout.isEmpty ? .invalidArgument("The layout name is empty")
            : find.map { $0.queries.isEmpty } == true ? .invalidArgument("A find needs at least one query") : nil
        guard let find else {
            return PageSource<V>(api: api, pageSize: pageSize, invalid: invalid,
                                 endpoint: { offset, limit in range(offset, limit, sort, options) }, counts: counts, ids: ids)
        }
        // The walk's window replaces the find's own; `sort` and the set options win over the find's.
        var request = find
        if !sort.isEmpty { request.sort = sort }
        if options.portals != nil { request.portals = options.portals }
        if options.layoutResponse != nil { request.layoutResponse = options.layoutResponse }
        if options.dateFormat != nil { request.dateFormat = options.dateFormat }
        if options.timeZone != nil { request.timeZone = options.timeZone }
        if !options.scripts.isEmpty { request.scripts = options.scripts }
        let base = request
        return PageSource<V>(api: api, pageSize: pageSize, invalid: invalid, endpoint: { offset, limit in
            var windowed = base
            windowed.offset = offset
            windowed.limit = limit
            return found(windowed)
        }, counts: counts, ids: ids)
    }

    /// The raw walk.
    static func raw(api: DataAPI, layout: String, find: FMFindRequest?, pageSize: Int, sort: [FMSort],
                    options: FMReadOptions) -> PageSource<FMFoundSet> {
        make(api: api, layout: layout, find: find, pageSize: pageSize, sort: sort, options: options,
             range: { Endpoints.getRecords(layout: layout, offset: $0, limit: $1, sort: $2, options: $3) },
             found: { Endpoints.find(layout: layout, request: $0) },
             counts: { ($0.records.count, $0.dataInfo?.foundCount) },
             ids: { $0.records.map { RecordKey.key(id: RawJSON.string($0["recordId"]), content: RecordKey.content($0)) } })
    }

    /// The typed walk.
    static func typed<T: Decodable & SendableMetatype>(_ type: T.Type, api: DataAPI, layout: String, find: FMFindRequest?,
                                                       pageSize: Int, sort: [FMSort],
                                                       options: FMReadOptions) -> PageSource<FMTypedFoundSet<T>> {
        make(api: api, layout: layout, find: find, pageSize: pageSize, sort: sort, options: options,
             range: { Endpoints.getRecords(as: type, layout: layout, offset: $0, limit: $1, sort: $2, options: $3) },
             found: { Endpoints.find(as: type, layout: layout, request: $0) },
             counts: { ($0.records.count, $0.dataInfo?.foundCount) },
             ids: { page in
                 page.records.indices.map { RecordKey.key(id: page.records[$0].recordId, content: page.contentKeys[$0] ?? "") }
             })
    }

    /// Drives the walk for the callback surface: `page` runs on the callback queue for each page and the
    /// next page is requested only after it returned `true`; `completion` runs once, on the callback queue.
    func walk(handle: FMRequest, page: @escaping (Page) -> Bool, completion: @escaping (Int?, String) -> Void) {
        var delivered = 0
        var previous = Previous()
        // Read here, where the caller is: the next pages are requested from the callback queue.
        let logContext = api.context.callerLogContext()
        func step(_ offset: Int) {
            let requestID = api.context.newRequestID()
            fetch(offset: offset, handle: handle, requestID: requestID, logContext: logContext) { result in
                switch result {
                case .failure(let error):
                    completion(nil, error.code)
                case .success(nil):
                    completion(delivered, "0")
                case .success(let current?):
                    let next: Int?
                    switch self.next(after: current, at: offset, previous: &previous, requestID: requestID, logContext: logContext) {
                    case .success(let offset): next = offset
                    case .failure(let error): return FMError.withCurrent(error) { completion(nil, error.code) }
                    }
                    delivered += counts(current).returned
                    guard page(current) else {
                        completion(delivered, "0")
                        return
                    }
                    guard let next else {
                        completion(delivered, "0")
                        return
                    }
                    if handle.isCancelled {
                        // As every (value?, code) completion, with the error behind the code bound.
                        return FMError.withCurrent(.cancelled) { completion(nil, FMError.ClientCode.cancelled) }
                    }
                    step(next)
                }
            }
        }
        step(1)
    }
}

extension DataAPI {
    /// Walks a whole table (`find: nil`) or found set page by page, the callback way.
    ///
    /// `page` runs on ``callbackQueue`` with each page, in order; the next page is requested only after it
    /// returns (so at most one page is held at a time), and returning `false` stops the walk. The end of
    /// the set ends the walk: an empty table or a find that matches nothing is a walk of no pages that
    /// completes with `"0"`, never a `"401"`; a page shorter than `pageSize` is the end only when its
    /// `dataInfo.foundCount` (or the lack of one) says so, so a server that caps pages below `pageSize` is
    /// read to the end. `completion` runs exactly once, on ``callbackQueue``, after the
    /// last `page` call: with the number of records delivered and `"0"` (the end, or `page` returned
    /// `false`), or `nil` and the code of the failed page (`"-1005"` after ``FMRequest/cancel()``).
    ///
    /// FileMaker runs the find again for every page: records created, edited or deleted during the walk
    /// can shift between pages (a record may be seen twice or not at all). Sort on a stable field and
    /// treat the walk as a snapshot only when nothing writes to the table meanwhile.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - find: the find to page through, or `nil` for all records; its `offset` and `limit` are
    ///     replaced by the page window.
    ///   - pageSize: records per page (1 or more; FileMaker's default page is 100).
    ///   - sort: the sort; for a find, when not empty, it replaces the find's sort.
    ///   - options: portals, response layout, `dateformats`, time zone and scripts (scripts run with every
    ///     page); for a find, the ones set here replace the find's.
    ///   - page: called with each page; return `true` to go on, `false` to stop.
    ///   - completion: the number of records delivered, or `nil`, and the code.
    /// - Returns: a handle that cancels the walk, whichever page is in flight.
    @discardableResult
    public func forEachPage(layout: String, find: FMFindRequest? = nil, pageSize: Int = 100, sort: [FMSort] = [],
                            options: FMReadOptions = .init(),
                            page: sending @escaping (FMFoundSet) -> Bool,
                            completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        let handle = FMRequest()
        PageSource<FMFoundSet>.raw(api: self, layout: layout, find: find, pageSize: pageSize, sort: sort, options: options)
            .walk(handle: handle, page: page, completion: completion)
        return handle
    }

    /// Walks a whole table or found set page by page, each page decoded into `T` with the FileMaker
    /// rules of ``FMRecord`` (empty fields, numbers as text, dates, repetitions); see
    /// ``forEachPage(layout:find:pageSize:sort:options:page:completion:)``.
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - layout: the layout name.
    ///   - find: the find to page through, or `nil` for all records.
    ///   - pageSize: records per page.
    ///   - sort: the sort.
    ///   - options: portals, response layout, `dateformats`, time zone, scripts.
    ///   - page: called with each page; return `true` to go on, `false` to stop.
    ///   - completion: the number of records delivered, or `nil`, and the code (`"-1007"` when a page does
    ///     not decode as `T`).
    /// - Returns: a handle that cancels the walk.
    @discardableResult
    public func forEachPage<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, find: FMFindRequest? = nil,
                                                             pageSize: Int = 100, sort: [FMSort] = [],
                                                             options: FMReadOptions = .init(),
                                                             page: sending @escaping (FMTypedFoundSet<T>) -> Bool,
                                                             completion: sending @escaping (Int?, String) -> Void) -> FMRequest {
        let handle = FMRequest()
        PageSource<FMTypedFoundSet<T>>.typed(type, api: self, layout: layout, find: find, pageSize: pageSize, sort: sort,
                                             options: options)
            .walk(handle: handle, page: page, completion: completion)
        return handle
    }
}
