import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Paging through the callback and async surfaces against the emulator (4 bands, 2 in Austin).
@Suite("Paging, client against the emulator")
struct PagingTests {
    struct Band: Decodable, Sendable, Equatable {
        var name: String
        var city: String?
        var members: Int?
        var formed: Date?
    }

    private func pageRequests(_ emulator: Emulator) -> Int {
        emulator.requestLog.filter { $0.decodedPath.hasSuffix("/records") || $0.decodedPath.hasSuffix("/_find") }.count
    }

    private func names(_ page: FMFoundSet) -> [String] {
        page.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String }
    }

    @Test func asyncWalksTheWholeTableAndStopsAtTheEnd() async throws {
        try await withClient { api, emulator in
            var seen: [[String]] = []
            for try await page in api.pages(layout: "Bands", pageSize: 3, sort: [FMSort("name")]) {
                seen.append(names(page))
            }
            #expect(seen == [["David", "Joe Example", "John Doe"], ["John Smith"]])
            #expect(pageRequests(emulator) == 2, "a short page is the last one: no request past the end")

            // A page size that divides the set: the found count ends the walk, without a 401 request.
            emulator.clearRequestLog()
            var sizes: [Int] = []
            for try await page in api.pages(layout: "Bands", pageSize: 2) { sizes.append(page.count) }
            #expect(sizes == [2, 2])
            #expect(pageRequests(emulator) == 2)
        }
    }

    @Test func pastTheEndIsTheEndNotAnError() async throws {
        try await withClient { api, emulator in
            // Records deleted during the walk: the next page's offset is past the end (FileMaker's 401).
            var pages = 0
            for try await page in api.pages(layout: "Bands", pageSize: 2) {
                pages += 1
                if pages == 1 {
                    for record in page.records {
                        _ = try await api.deleteRecord(layout: "Bands", recordId: Int(record["recordId"] as? String ?? "") ?? 0)
                    }
                    _ = try await api.deleteRecord(layout: "Bands", recordId: 3)
                    _ = try await api.deleteRecord(layout: "Bands", recordId: 4)
                }
            }
            #expect(pages == 1)
            let (count, code) = await callback(api) { done in
                api.forEachPage(layout: "Bands", pageSize: 2, page: { _ in true }, completion: done)
            }
            #expect(code == "0" && count == 0, "an empty table is a walk of no pages")
        }
    }

    @Test func findWalksAndNoMatchIsAnEmptyWalk() async throws {
        try await withClient { api, emulator in
            var austin: [String] = []
            for try await page in api.pages(layout: "Bands", find: FMFindRequest(["city": "Austin"]), pageSize: 1, sort: [FMSort("name")]) {
                #expect(page.count == 1)
                austin += names(page)
            }
            #expect(austin == ["David", "John Doe"])

            var none = 0
            for try await _ in api.pages(layout: "Bands", find: FMFindRequest(["city": "Nowhere"])) { none += 1 }
            #expect(none == 0)

            let counter = CallCounter()
            let (count, code) = await callback(api) { done in
                api.forEachPage(layout: "Bands", find: FMFindRequest(["city": "Nowhere"]), page: { _ in _ = counter.hit(); return true },
                                completion: done)
            }
            #expect(code == "0" && count == 0 && counter.value == 0)
        }
    }

    @Test func callbackPagesInOrderOnTheCallbackQueueAndStopsEarly() async throws {
        let queue = DispatchQueue(label: "paging-tests")
        try await withClient(callbackQueue: queue) { api, emulator in
            let counter = CallCounter()
            let (count, code) = await callback(api) { done in
                api.forEachPage(layout: "Bands", pageSize: 1, page: { page in
                    dispatchPrecondition(condition: .onQueue(queue))
                    return counter.hit() < 2   // stop after the second page
                }, completion: done)
            }
            #expect(code == "0" && count == 2 && counter.value == 2)
            #expect(pageRequests(emulator) == 2, "no page is fetched after the handler said stop")
        }
    }

    @Test func typedPagesDecodeFileMakerValues() async throws {
        try await withClient { api, _ in
            var bands: [Band] = []
            for try await page in api.pages(as: Band.self, layout: "Bands", pageSize: 3, sort: [FMSort("name")]) {
                bands += page.records.map(\.fieldData)
            }
            #expect(bands.map(\.name) == ["David", "Joe Example", "John Doe", "John Smith"])
            #expect(bands[0].formed == nil, "an empty date field is nil")
            #expect(bands[2].formed == Date(timeIntervalSince1970: 163_987_200), "03/14/1975, UTC")

            // ISO dates (dateformats 2) and a time zone of the caller's choice.
            let zone = try #require(TimeZone(secondsFromGMT: 3600))
            var iso: [Band] = []
            for try await page in api.pages(as: Band.self, layout: "Bands", find: FMFindRequest(["name": "John Doe"]),
                                            options: FMReadOptions(dateFormat: .iso8601, timeZone: zone)) {
                iso += page.records.map(\.fieldData)
            }
            #expect(iso.first?.formed == Date(timeIntervalSince1970: 163_987_200 - 3600))

            let counter = CallCounter()
            let (count, code) = await callback(api) { done in
                api.forEachPage(as: Band.self, layout: "Bands", pageSize: 2, page: { page in
                    _ = counter.hit()
                    return !page.records.isEmpty
                }, completion: done)
            }
            #expect(code == "0" && count == 4 && counter.value == 2)
        }
    }

    @Test func aPageFailingMidWalkIsReportedOnce() async throws {
        try await withClient(retry: FMRetryPolicy(maxAttempts: 3)) { api, emulator in
            // Callback: the fault is injected while the first page is being handled (back-pressure: the
            // second request is only sent after the handler returns).
            let counter = CallCounter()
            let (count, code) = await callback(api) { done in
                api.forEachPage(layout: "Bands", pageSize: 1, page: { _ in
                    // A 502 is retried (here 3 attempts; the default rides it out): fail every attempt.
                    if counter.hit() == 1 { emulator.inject(.html502, count: 3, matching: "records") }
                    return true
                }, completion: done)
            }
            #expect(count == nil && code == FMError.ClientCode.notJSON && counter.value == 1)

            // Async: thrown once, then the sequence is over.
            var iterator = api.pages(layout: "Bands", pageSize: 1).makeAsyncIterator()
            #expect(try await iterator.next() != nil)
            emulator.inject(.fileMakerError(code: "8003", status: 500, message: "Record is locked"), count: 1, matching: "records")
            do {
                _ = try await iterator.next()
                Issue.record("expected a throw")
            } catch let error as FMError {
                #expect(error.code == "8003")
            }
            #expect(try await iterator.next() == nil)
        }
    }

    @Test func cancellingMidWalk() async throws {
        let queue = DispatchQueue(label: "paging-cancel")
        try await withClient(callbackQueue: queue) { api, emulator in
            // Async: the task is cancelled while a page is being handled; the next page throws -1005.
            let task = Task { () -> (pages: Int, code: String?) in
                var pages = 0
                do {
                    for try await _ in api.pages(layout: "Bands", pageSize: 1) {
                        pages += 1
                        withUnsafeCurrentTask { $0?.cancel() }
                    }
                } catch let error as FMError {
                    return (pages, error.code)
                } catch {
                    return (pages, "other")
                }
                return (pages, nil)
            }
            let result = await task.value
            #expect(result.pages == 1 && result.code == FMError.ClientCode.cancelled)

            // Callback: the handle is cancelled from the page handler (the handle is stored on the callback
            // queue before any page can run there).
            let handle = Locked<FMRequest?>(nil)
            let counter = CallCounter()
            let (count, code) = await callback(api) { done in
                queue.sync {
                    handle.set(api.forEachPage(layout: "Bands", pageSize: 1, page: { _ in
                        _ = counter.hit()
                        handle.get()?.cancel()
                        return true
                    }, completion: done))
                }
            }
            #expect(count == nil && code == FMError.ClientCode.cancelled && counter.value == 1)
        }
    }

    @Test func invalidArgumentsAreReportedWithoutSending() async throws {
        try await withClient { api, emulator in
            let (count, code) = await callback(api) { done in
                api.forEachPage(layout: "Bands", pageSize: 0, page: { _ in true }, completion: done)
            }
            #expect(count == nil && code == FMError.ClientCode.invalidArgument)
            await #expect(throws: FMError.self) {
                for try await _ in api.pages(layout: "", pageSize: 10) {}
            }
            #expect(pageRequests(emulator) == 0)
        }
    }
}

/// A small lock-protected box for tests.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
}
