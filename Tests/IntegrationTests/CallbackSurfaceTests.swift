import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// Every endpoint through the callback surface, with the real URLSession against the emulator.
@Suite("Callback surface against the emulator")
struct CallbackSurfaceTests {
    @Test func sessionLifecycle() async throws {
        try await withClient { api, emulator in
            let (token, code) = await callback(api) { api.login(completion: $0) }
            #expect(code == "0")
            #expect(token?.count == 52)
            #expect(api.isActiveToken())
            let (valid, vcode) = await callback(api) { done in api.validateSession { done($0, $1) } }
            #expect(valid == true && vcode == "0")
            let (loggedOut, lcode) = await callback(api) { done in api.logout { done($0, $1) } }
            #expect(loggedOut == true && lcode == "0")
            #expect(!api.isActiveToken())
            #expect(emulator.activeSessionCount == 0)
        }
    }

    @Test func refreshTokenReturnsTokenAndFifteenMinuteExpiry() async throws {
        try await withClient { api, _ in
            let before = Date()
            let counter = CallCounter()
            let result: UncheckedResult<(String?, Date?)> = await withCheckedContinuation { continuation in
                api.refreshToken { token, expiry, code in
                    if counter.hit() == 1 { continuation.resume(returning: UncheckedResult(value: (token, expiry), code: code)) }
                }
            }
            #expect(result.code == "0")
            #expect(result.value?.0?.count == 52)
            let expiry = try #require(result.value?.1)
            #expect(expiry.timeIntervalSince(before) >= 899 && expiry.timeIntervalSince(before) <= 901 + 60)
        }
    }

    @Test func metadata() async throws {
        try await withClient { api, _ in
            let (info, c1) = await callback(api) { api.productInfo(completion: $0) }
            #expect(c1 == "0" && info?.name == "FileMaker Data API Engine")
            let (databases, c2) = await callback(api) { api.databases(completion: $0) }
            #expect(c2 == "0" && databases?.map(\.name) == ["Integration"])
            let (layouts, c3) = await callback(api) { api.layouts(completion: $0) }
            #expect(c3 == "0")
            let folder = try #require(layouts?.first { $0.name == "Archive" })
            #expect(folder.isFolder && folder.folderLayoutNames == ["Band List"])
            let (meta, c4) = await callback(api) { api.layoutMetadata(layout: "Bands", completion: $0) }
            #expect(c4 == "0")
            #expect(meta?.fieldMetaData.first { $0.name == "members" }?.result == "number")
            #expect(meta?.valueLists.first { $0.name == "Cities" }?.values.map(\.value) == ["Austin", "Dallas", "Houston"])
            let (scripts, c5) = await callback(api) { api.scripts(completion: $0) }
            #expect(c5 == "0" && Set(scripts?.map(\.name) ?? []) == ["Echo", "Fail"])
        }
    }

    @Test func recordLifecycle() async throws {
        try await withClient { api, emulator in
            let (ref, c1) = await callback(api) {
                api.createRecord(layout: "Bands", fieldData: ["name": "Created", "city": "Austin", "members": 6],
                                 portalData: ["gigs": [["Gigs::venue": "Loopback", "Gigs::year": 2024]]], completion: $0)
            }
            #expect(c1 == "0")
            let id = try #require(ref.flatMap { Int($0.recordId) })
            #expect(ref?.modId == "0")

            let (one, c2) = await callback(api) { api.getRecord(layout: "Bands", recordId: id, completion: $0) }
            #expect(c2 == "0")
            let fields = one?.records.first?["fieldData"] as? [String: Any]
            #expect(fields?["name"] as? String == "Created")
            #expect((fields?["members"] as? NSNumber)?.intValue == 6)
            let portal = (one?.records.first?["portalData"] as? [String: Any])?["gigs"] as? [[String: Any]]
            #expect(portal?.first?["Gigs::venue"] as? String == "Loopback")

            let (edit, c3) = await callback(api) {
                api.editRecord(layout: "Bands", recordId: id, fieldData: ["city": "Dallas"], modId: "0", completion: $0)
            }
            #expect(c3 == "0" && edit?.modId == "1")
            let sentBody = emulator.requestLog.last { $0.method == "PATCH" }?.body ?? Data()
            let sent = try JSONSerialization.jsonObject(with: sentBody) as? [String: Any]
            #expect(sent?["modId"] as? String == "0", "modId reaches the server")

            let (stale, c4) = await callback(api) {
                api.editRecord(layout: "Bands", recordId: id, fieldData: ["city": "Nope"], modId: "0", completion: $0)
            }
            #expect(stale == nil && c4 == "306")

            let (dup, c5) = await callback(api) { api.duplicateRecord(layout: "Bands", recordId: id, completion: $0) }
            #expect(c5 == "0" && dup?.recordId != ref?.recordId)

            let (_, c6) = await callback(api) { api.deleteRecord(layout: "Bands", recordId: id, completion: $0) }
            #expect(c6 == "0")
            let (gone, c7) = await callback(api) { api.getRecord(layout: "Bands", recordId: id, completion: $0) }
            #expect(gone == nil && c7 == "101")
        }
    }

    @Test func rangeWithSortOffsetLimitAndPortals() async throws {
        try await withClient { api, emulator in
            let (page, code) = await callback(api) {
                api.getRecords(layout: "Bands", offset: 2, limit: 2, sort: [FMSort("members", order: .descend)],
                               options: FMReadOptions(portals: [FMPortalRange("gigs", offset: 2, limit: 1)]), completion: $0)
            }
            #expect(code == "0")
            let members = page?.records.compactMap { ($0["fieldData"] as? [String: Any])?["members"] as? NSNumber }.map(\.intValue)
            #expect(members == [4, 3])
            #expect(page?.dataInfo?.foundCount == 4 && page?.dataInfo?.returnedCount == 2)
            let target = emulator.requestLog.last { $0.method == "GET" }?.target ?? ""
            #expect(target.contains("_offset=2") && target.contains("_limit=2"), "offset/limit reach the server: \(target)")
            let doe = page?.records.last
            let gigs = (doe?["portalData"] as? [String: Any])?["gigs"] as? [[String: Any]]
            #expect(gigs?.count == 1 && gigs?.first?["Gigs::venue"] as? String == "Stubb's")
        }
    }

    @Test func findWithOmitAndNoMatch() async throws {
        try await withClient { api, _ in
            let request = FMFindRequest(
                queries: [FMQuery(["name": "John"]), FMQuery(["name": "Joe"]), FMQuery(["name": "John Doe"], omit: true)],
                sort: [FMSort("name")])
            let (found, code) = await callback(api) { api.find(layout: "Bands", request: request, completion: $0) }
            #expect(code == "0")
            #expect(found?.records.compactMap { ($0["fieldData"] as? [String: Any])?["name"] as? String } == ["Joe Example", "John Smith"])

            let (none, noneCode) = await callback(api) {
                api.find(layout: "Bands", request: FMFindRequest(queries: [FMQuery(["name": "==Nobody"])]), completion: $0)
            }
            #expect(noneCode == "401")
            #expect(none != nil && none?.records.isEmpty == true, "401 is an empty found set, not a failure")
        }
    }

    @Test func scriptsGlobalsAndScriptKeys() async throws {
        try await withClient { api, _ in
            let (echo, c1) = await callback(api) { api.runScript(layout: "Bands", script: "Echo", parameter: "a b&c=d+e", completion: $0) }
            #expect(c1 == "0" && echo?.result == "a b&c=d+e" && echo?.error == "0")
            let (fail, c2) = await callback(api) { api.runScript(layout: "Bands", script: "Fail", completion: $0) }
            #expect(c2 == "0" && fail?.error == "3")
            let (_, c3) = await callback(api) { api.runScript(layout: "Bands", script: "No Such Script", completion: $0) }
            #expect(c3 == "104")
            let (ok, c4) = await callback(api) { done in api.setGlobals(["Bands::g_motto": "loud"]) { done($0, $1) } }
            #expect(ok == true && c4 == "0")
        }
    }

    @Test func containerUploadAndDownload() async throws {
        try await withClient { api, _ in
            let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data((0..<200).map { UInt8($0) })
            let (_, c1) = await callback(api) {
                api.uploadContainer(layout: "Bands", recordId: 1, field: "photo", data: png, fileName: "p.png", completion: $0)
            }
            #expect(c1 == "0")
            let (one, _) = await callback(api) { api.getRecord(layout: "Bands", recordId: 1, completion: $0) }
            let urlString = try #require((one?.records.first?["fieldData"] as? [String: Any])?["photo"] as? String)
            let url = try #require(URL(string: urlString))
            let (bytes, c2) = await callback(api) { api.downloadContainer(url: url, completion: $0) }
            #expect(c2 == "0" && bytes == png)

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("swiftfm-\(UUID().uuidString).png")
            defer { try? FileManager.default.removeItem(at: file) }
            let (saved, c3) = await callback(api) { api.downloadContainer(url: url, to: file, completion: $0) }
            #expect(c3 == "0" && saved == file)
            #expect(try Data(contentsOf: file) == png)
        }
    }

    @Test func namesNeedingEncodingReachTheirLayout() async throws {
        try await withClient { api, _ in
            let (found, code) = await callback(api) { api.getRecords(layout: "My Layout/Odd?#", limit: 1, completion: $0) }
            #expect(code == "0" && found?.records.count == 1)
            let (_, missing) = await callback(api) { api.getRecords(layout: "../sessions", completion: $0) }
            #expect(missing == "105")
        }
    }
}
