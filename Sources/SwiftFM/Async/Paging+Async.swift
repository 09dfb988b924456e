import Foundation

/// The pages of a walk over a table or found set, as an `AsyncSequence`.
///
/// Each iteration walks the set from its first record: the next page is requested only when the loop
/// asks for it, so at most one page is held at a time. The end of the set ends the sequence (an empty
/// table or a find that matches nothing is a sequence of no pages, never a `"401"` error; a page shorter than the
/// page size ends it only when its `dataInfo.foundCount`, or the lack of one, says so). A failed page
/// throws its ``FMError`` once and ends the sequence; cancelling the task cancels the page in flight
/// (`"-1005"`).
///
/// FileMaker runs the find again for every page: records changed during the walk can shift between pages.
///
/// ```swift
/// for try await page in api.pages(layout: "Contacts", pageSize: 500) {
///     for record in page.records { … }
/// }
/// ```
public struct FMPages<Page>: AsyncSequence, Sendable {
    /// A page: an ``FMFoundSet`` or an ``FMTypedFoundSet``.
    public typealias Element = Page

    let source: PageSource<Page>

    /// Starts a walk from the first record.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source)
    }

    /// Fetches the pages of one walk, one per call of ``next()``.
    public struct Iterator: AsyncIteratorProtocol {
        let source: PageSource<Page>
        var offset: Int? = 1
        /// What the walk knows of the full page before (see ``PageSource/next(after:at:previous:requestID:logContext:)``).
        var previous = PageSource<Page>.Previous()

        /// The next page, or `nil` at the end of the set (and after a failure was thrown once).
        /// - Throws: ``FMError`` for a failed page (`"-1005"` when the task was cancelled).
        public mutating func next() async throws -> Page? {
            guard let current = offset else { return nil }
            offset = nil // a failure ends the walk: it is thrown once
            if Task.isCancelled { throw FMError.cancelled }
            let source = self.source
            let handle = FMRequest()
            let requestID = source.api.context.newRequestID()
            let logContext = source.api.context.callerLogContext()   // in the looping task
            guard let page = try await source.api.bridge(attaching: handle, { completion in
                source.fetch(offset: current, handle: handle, requestID: requestID, logContext: logContext, completion: completion)
            }) else { return nil }
            offset = try source.next(after: page, at: current, previous: &previous, requestID: requestID, logContext: logContext).get()
            return page
        }
    }
}

extension DataAPI {
    /// The pages of a whole table (`find: nil`) or found set, as an `AsyncSequence` of ``FMFoundSet``.
    ///
    /// Nothing is sent until the loop asks for the first page; see ``FMPages`` for the end of the set,
    /// failures and cancellation. FileMaker runs the find again for every page: records created, edited or
    /// deleted during the walk can shift between pages.
    ///
    /// - Parameters:
    ///   - layout: the layout name.
    ///   - find: the find to page through, or `nil` for all records; its `offset` and `limit` are replaced
    ///     by the page window.
    ///   - pageSize: records per page (1 or more; a smaller value throws `"-1002"` at the first page).
    ///   - sort: the sort; for a find, when not empty, it replaces the find's sort.
    ///   - options: portals, response layout, `dateformats`, time zone and scripts (scripts run with every
    ///     page); for a find, the ones set here replace the find's.
    public func pages(layout: String, find: FMFindRequest? = nil, pageSize: Int = 100, sort: [FMSort] = [],
                      options: FMReadOptions = .init()) -> FMPages<FMFoundSet> {
        FMPages(source: .raw(api: self, layout: layout, find: find, pageSize: pageSize, sort: sort, options: options))
    }

    /// The pages of a whole table or found set decoded into `T`, as an `AsyncSequence` of
    /// ``FMTypedFoundSet``; records decode with the FileMaker rules of ``FMRecord`` (empty fields, numbers
    /// as text, dates, repetitions). See ``pages(layout:find:pageSize:sort:options:)``.
    ///
    /// - Parameters:
    ///   - type: the `Decodable` type of each record's `fieldData`.
    ///   - layout: the layout name.
    ///   - find: the find to page through, or `nil` for all records.
    ///   - pageSize: records per page.
    ///   - sort: the sort.
    ///   - options: portals, response layout, `dateformats`, time zone, scripts.
    public func pages<T: Decodable & SendableMetatype>(as type: T.Type, layout: String, find: FMFindRequest? = nil,
                                                       pageSize: Int = 100, sort: [FMSort] = [],
                                                       options: FMReadOptions = .init()) -> FMPages<FMTypedFoundSet<T>> {
        FMPages(source: .typed(type, api: self, layout: layout, find: find, pageSize: pageSize, sort: sort, options: options))
    }
}
