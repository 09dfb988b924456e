import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
@testable import SwiftFM

/// Seeded, deterministic fuzzing of the answer side: mutated and truncated variants of real Data API
/// answers, with assorted statuses, go through the engine (stub transport, managed session) into every kind
/// of decoder. Each call must complete exactly once, on the callback queue, without crashing.
@Suite("Fuzzed answers")
struct AnswerFuzzTests {
    typealias Generator = SplitMix64

    static let seeds: [String] = [
        #"{"response":{"dataInfo":{"database":"Music","layout":"Artists","table":"Artists","totalRecordCount":3,"foundCount":3,"returnedCount":2},"data":[{"fieldData":{"name":"Ann","city":"Austin","born":1970.5},"portalData":{"Albums":[{"recordId":"4","Albums::title":"One","modId":"0"}]},"recordId":"1","modId":"2","portalDataInfo":[{"portalObjectName":"Albums","database":"Music","table":"Albums","foundCount":1,"returnedCount":1}]}]},"messages":[{"code":"0","message":"OK"}]}"#,
        #"{"response":{"recordId":"7","modId":"0","scriptResult":"x","scriptError":"0","scriptResult.prerequest":"p","scriptError.prerequest":"0"},"messages":[{"code":"0","message":"OK"}]}"#,
        #"{"response":{"fieldMetaData":[{"name":"name","type":"normal","displayType":"editText","result":"text","global":false,"autoEnter":false,"fourDigitYear":false,"maxRepeat":1,"maxCharacters":0,"notEmpty":false,"numeric":false,"timeOfDay":false,"repetitionStart":1,"repetitionEnd":1}],"portalMetaData":{"Albums":[]},"valueLists":[{"name":"Cities","type":"customList","values":[{"displayValue":"Austin","value":"Austin"}]}]},"messages":[{"code":"0","message":"OK"}]}"#,
        #"{"response":{"scriptResult":"42","scriptError":"0"},"messages":[{"code":"0","message":"OK"}]}"#,
        #"{"messages":[{"code":"401","message":"No records match the request"}],"response":{}}"#,
        #"{"messages":[{"code":"952","message":"Invalid FileMaker Data API token (*)"}],"response":{}}"#,
        #"{"response":{"modId":"3"},"messages":[{"code":"0","message":"OK"}]}"#,
    ]

    static let fragments = ["{", "}", "[", "]", "\"", ":", ",", "0", "-", "e", ".", "null", "true", "1e400", "-9223372036854775809",
                            "1e300", "\"NaN\"", "[]", "{}", "\\", "\\u0000", "\u{FEFF}", "é", "{\"code\":0}", "\"messages\":{}"]

    static func mutate(_ text: String, _ random: inout Generator) -> Data {
        var bytes = Array(text.utf8)
        for _ in 0..<(1 + random.below(4)) {
            guard !bytes.isEmpty else { break }
            let at = random.below(bytes.count)
            switch random.below(5) {
            case 0: bytes = Array(bytes[..<at])                                          // truncate
            case 1: bytes[at] = Array(fragments[random.below(fragments.count)].utf8).first ?? 0x20 // replace a byte
            case 2: bytes.insert(contentsOf: Array(fragments[random.below(fragments.count)].utf8), at: at) // insert
            case 3: bytes.removeSubrange(at..<min(bytes.count, at + 1 + random.below(12)))              // delete a run
            default:                                                                      // duplicate a run
                let end = min(bytes.count, at + 1 + random.below(40))
                bytes.insert(contentsOf: bytes[at..<end], at: at)
            }
        }
        return Data(bytes)
    }

    struct Loose: Decodable, Sendable { var name: String?; var city: String? }

    @Test func mutatedAnswersCompleteOnceWithoutCrashing() {
        var random = Generator(state: 0x5EED_F00D)
        let statuses = [200, 200, 200, 401, 500, 502, 400, 302]
        let count = 8_000
        var answers: [(Int, Data)] = []
        for index in 0..<count {
            answers.append((statuses[random.below(statuses.count)], Self.mutate(Self.seeds[index % Self.seeds.count], &random)))
        }
        let table = answers
        // Three attempts (the default before reads rode out a restart): a read answered 502 gives up, it
        // does not ride the 502 out until its deadline.
        var configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "s3cret-pass")
        configuration.retry = FMRetryPolicy(maxAttempts: 3)
        let harness = Harness(configuration: configuration) { request in
            if isLogin(request) { return .json(200, Bodies.login()) }
            // The answer's index is the layout name: …/layouts/F{index}/…
            let parts = (request.url?.path ?? "").split(separator: "/")
            guard let layout = parts.first(where: { $0.hasPrefix("F") }), let index = Int(layout.dropFirst()), index < table.count
            else { return nil }
            let (status, body) = table[index]
            return .body(status, body, contentType: "application/json")
        }
        let recorder = Recorder<String>(expecting: count, queueKey: Harness.key)
        let api = harness.api
        for index in 0..<count {
            let layout = "F\(index)"
            let done: @Sendable (String) -> Void = { recorder.record($0) }
            switch index % 8 {
            case 0: api.getRecords(layout: layout) { _, code in done(code) }
            case 1: api.createRecord(layout: layout, fieldData: ["a": 1]) { _, code in done(code) }
            case 2: api.layoutMetadata(layout: layout) { _, code in done(code) }
            case 3: api.runScript(layout: layout, script: "s") { _, code in done(code) }
            case 4: api.find(layout: layout, request: FMFindRequest(queries: [FMQuery(["a": "1"])])) { _, code in done(code) }
            case 5: api.getRecords(as: Loose.self, layout: layout) { _, code in done(code) }
            case 6: api.editRecord(layout: layout, recordId: 1, fieldData: ["a": "b"]) { _, code in done(code) }
            default:
                let request = api.getRecord(layout: layout, recordId: 1) { _, code in done(code) }
                if index % 16 == 7 { request.cancel() }
            }
        }
        let codes = recorder.wait()
        harness.drain()
        #expect(codes.count == count, "every call completes exactly once")
        #expect(recorder.offQueue == 0)
    }
}
