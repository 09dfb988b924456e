#if canImport(Glibc)
import Glibc

// The control API (`--control`): status, every fault type injected and played on the Data API, the clock, sessions,
// restart and counters, settings and log caps, reset, Claris ID and OAuth acceptance; unknown endpoints refused and
// secrets redacted.

#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestSupport
@testable import SwiftFMEmulator

/// An emulator with its control API running, and raw HTTP calls to both.
final class ControlledEmulator {
    let data: RawEmulator
    let controlPort: UInt16

    init() throws {
        data = try RawEmulator()
        let url = try data.emulator.startControl()
        controlPort = try #require(url.port.map(UInt16.init))
    }

    var emulator: Emulator { data.emulator }

    /// Calls the control API; returns the status and the parsed JSON answer.
    @discardableResult
    func control(_ method: String, _ path: String, _ body: String? = nil) throws -> (status: Int, json: [String: Any]) {
        let c = try HTTPRawClient(port: controlPort)
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if let body { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        try c.send(text + "\r\n" + (body ?? ""))
        let r = try c.readResponse()
        #expect(r.header("Content-Type") == "application/json")
        let json = try JSONSerialization.jsonObject(with: r.body) as? [String: Any]
        return (r.status, try #require(json))
    }
}

@Suite struct ControlAPITests {
    @Test func indexAndStatus() throws {
        let c = try ControlledEmulator()
        let index = try c.control("GET", "/v1")
        #expect(index.status == 200)
        #expect(index.json["version"] as? Int == 1)
        #expect((index.json["endpoints"] as? [String])?.contains("POST /v1/faults") == true)
        let status = try c.control("GET", "/v1/status")
        #expect(status.json["database"] as? String == "Contacts")
        #expect(status.json["loginCount"] as? Int == 0)
        #expect(status.json["dataURL"] as? String == c.emulator.baseURL?.absoluteString)
    }

    @Test func injectEveryFaultType() throws {
        let c = try ControlledEmulator()
        let faults = [
            #"{"fault":"status","status":503,"body":"busy","contentType":"text/plain","retryAfter":"1"}"#,
            #"{"fault":"fileMakerError","code":"812"}"#,
            #"{"fault":"resetConnection"}"#, #"{"fault":"drip","bytesPerSecond":100}"#, #"{"fault":"gzip"}"#,
            #"{"fault":"html401"}"#, #"{"fault":"killSession"}"#, #"{"fault":"expireSession","count":2}"#,
            #"{"fault":"delay","seconds":0.5}"#, #"{"fault":"closeMidBody"}"#, #"{"fault":"html502"}"#,
            #"{"fault":"truncatedJSON","matching":"/records"}"#,
        ]
        for (i, fault) in faults.enumerated() {
            let r = try c.control("POST", "/v1/faults", fault)
            #expect(r.status == 200, "\(fault): \(r.json)")
            #expect(r.json["pendingFaults"] as? Int == i + 1 + (i >= 7 ? 1 : 0))
        }
        #expect(c.emulator.core.state.withLock { $0.faults.map(\.fault) } == [
            .status(503, body: "busy", contentType: "text/plain", retryAfter: "1"),
            .fileMakerError(code: "812", status: 500, message: nil),
            .resetConnection, .drip(bytesPerSecond: 100), .gzip, .html401, .killSession, .expireSession,
            .delay(0.5), .closeMidBody, .html502, .truncatedJSON,
        ])
        let listed = try #require(try c.control("GET", "/v1/faults").json["faults"] as? [[String: Any]])
        #expect(listed.map { $0["fault"] as? String } == [
            "status", "fileMakerError", "resetConnection", "drip", "gzip", "html401", "killSession", "expireSession",
            "delay", "closeMidBody", "html502", "truncatedJSON",
        ])
        #expect(listed[7]["remaining"] as? Int == 2)
        #expect(listed[11]["matching"] as? String == "/records")
        #expect(listed[0]["matching"] is NSNull)
        for entry in listed {
            let keys = ControlHandler.faultKeys[entry["fault"] as? String ?? ""]
            #expect(keys != nil)
        }
        #expect(try c.control("DELETE", "/v1/faults").json["pendingFaults"] as? Int == 0)
        #expect(c.emulator.pendingFaultCount == 0)
    }

    @Test func anInjectedFaultIsPlayedOnTheDataAPI() throws {
        let c = try ControlledEmulator()
        let r = try c.control("POST", "/v1/faults", #"{"fault":"status","status":502,"body":"<html>bad gateway</html>","contentType":"text/html","count":2,"matching":"productInfo"}"#)
        #expect(r.status == 200)
        for _ in 0..<2 {
            let a = try c.data.send("GET", "/fmi/data/vLatest/productInfo")
            #expect(a.status == 502)
            #expect(a.header("Content-Type") == "text/html")
        }
        #expect(try c.data.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
    }

    @Test func clockSessionsRestartAndCounters() throws {
        let c = try ControlledEmulator()
        let a = try c.data.token(), b = try c.data.token()
        let sessions = try c.control("GET", "/v1/sessions")
        #expect(sessions.json["count"] as? Int == 2)
        #expect(Set(sessions.json["tokens"] as? [String] ?? []) == [a, b])
        #expect(try c.control("DELETE", "/v1/sessions/\(a)").json["expired"] as? Int == 1)
        #expect(try c.data.send("GET", "\(c.data.base)/layouts", token: a).code == "952")
        #expect(try c.data.send("GET", "\(c.data.base)/layouts", token: b).status == 200)
        #expect(try c.control("DELETE", "/v1/sessions").json["expired"] as? Int == 1)
        #expect(c.emulator.activeSessionCount == 0)

        let d = try c.data.token()
        #expect(try c.control("POST", "/v1/clock", #"{"advance":901}"#).status == 200)
        #expect(try c.data.send("GET", "\(c.data.base)/layouts", token: d).code == "952")

        let e = try c.data.token()
        #expect(try c.control("POST", "/v1/restart").status == 200)
        #expect(try c.data.send("GET", "\(c.data.base)/layouts", token: e).code == "952")

        let counters = try c.control("GET", "/v1/counters").json
        #expect(counters["loginCount"] as? Int == 4)
        #expect(counters["logoutCount"] as? Int == 0)
        #expect((counters["maxInFlight"] as? Int ?? 0) >= 1)
        #expect(try c.control("POST", "/v1/counters/reset-max-in-flight").json["maxInFlight"] as? Int == 0)
    }

    @Test func settingsAreReadAndWritten() throws {
        let c = try ControlledEmulator()
        let s = try c.control("PATCH", "/v1/settings", #"{"serviceTime":0.002,"serializesSessions":true,"maxSessions":1}"#)
        #expect(s.status == 200)
        #expect(s.json["serviceTime"] as? Double == 0.002)
        #expect(s.json["serializesSessions"] as? Bool == true)
        #expect(s.json["maxSessions"] as? Int == 1)
        #expect(c.emulator.serviceTime == 0.002 && c.emulator.serializesSessions && c.emulator.maxSessions == 1)
        _ = try c.data.token()
        #expect(try c.data.login().code == "956")
        #expect(try c.control("PATCH", "/v1/settings", #"{"maxSessions":null,"rejectLogins":true}"#).status == 200)
        #expect(c.emulator.maxSessions == nil)
        #expect(try c.data.login().code == "212")
        let got = try c.control("GET", "/v1/settings").json
        #expect(got["maxSessions"] is NSNull)
        #expect(got["rejectLogins"] as? Bool == true)
    }

    @Test("The request log's caps are read and set over the control API, and the log keeps only that many")
    func requestLogCapsAreSettings() throws {
        let c = try ControlledEmulator()
        let defaults = try c.control("GET", "/v1/settings").json
        #expect(defaults["maxLoggedRequests"] as? Int == 10_000)
        #expect(defaults["maxLoggedBytes"] as? Int == 32 * 1024 * 1024)
        let set = try c.control("PATCH", "/v1/settings", #"{"maxLoggedRequests":2}"#)
        #expect(set.status == 200)
        #expect(set.json["maxLoggedRequests"] as? Int == 2)
        #expect(c.emulator.maxLoggedRequests == 2)
        let token = try c.data.token()
        for _ in 0..<4 { #expect(try c.data.send("GET", "\(c.data.base)/layouts", token: token).status == 200) }
        let log = try #require(try c.control("GET", "/v1/log").json["requests"] as? [[String: Any]])
        #expect(log.count == 2)
        #expect(try c.control("GET", "/v1/status").json["maxLoggedRequests"] as? Int == 2)

        #expect(try c.control("PATCH", "/v1/settings", #"{"maxLoggedRequests":10000,"maxLoggedBytes":4096}"#).status == 200)
        #expect(c.emulator.maxLoggedRequests == 10_000 && c.emulator.maxLoggedBytes == 4096)
        for bad in [#"{"maxLoggedRequests":-1}"#, #"{"maxLoggedRequests":2.5}"#, #"{"maxLoggedRequests":"5"}"#,
                    #"{"maxLoggedRequests":null}"#, #"{"maxLoggedRequests":true}"#, #"{"maxLoggedRequests":1e12}"#,
                    #"{"maxLoggedBytes":-4}"#, #"{"maxLoggedRequests":5,"maxLoggedBytes":"x"}"#] {
            let r = try c.control("PATCH", "/v1/settings", bad)
            #expect(r.status == 400, "\(bad)")
            #expect((r.json["error"] as? String)?.contains("maxLogged") == true, "\(bad)")
        }
        // A refused request changed nothing.
        #expect(c.emulator.maxLoggedRequests == 10_000 && c.emulator.maxLoggedBytes == 4096)
    }

    @Test func resetLogAndRecords() throws {
        let c = try ControlledEmulator()
        c.data.emulator.logsBodies = true
        let token = try c.data.token()
        #expect(try c.data.send("POST", "\(c.data.base)/layouts/Contacts/records", token: token,
                                body: #"{"fieldData":{"name":"Via control"}}"#).status == 200)
        #expect(try c.data.send("DELETE", "\(c.data.base)/sessions/\(token)").status == 200)

        let log = try #require(try c.control("GET", "/v1/log").json["requests"] as? [[String: Any]])
        #expect(log.count == 3)
        #expect(log.map { $0["session"] as? Int } == [nil, 1, 1])
        #expect(log[0]["status"] as? Int == 200)
        #expect((log[1]["headers"] as? [[String]])?.contains(["Authorization", "Bearer <token>"]) == true)
        #expect((log[0]["headers"] as? [[String]])?.contains(["Authorization", "Basic <redacted>"]) == true)
        #expect(log[1]["body"] as? String == #"{"fieldData":{"name":"Via control"}}"#)
        #expect(log[2]["target"] as? String == "\(c.data.base)/sessions/<token>")
        let text = String(decoding: try JSONSerialization.data(withJSONObject: log), as: UTF8.self)
        #expect(!text.contains(token))

        let records = try #require(try c.control("GET", "/v1/tables/contacts/records").json["records"] as? [[String: Any]])
        #expect(records.count == 5)
        #expect(records.last?["name"] as? String == "Via control")
        #expect(records.first?["id"] as? Int == 1)
        #expect(try c.control("GET", "/v1/tables/Nope/records").status == 404)

        #expect(try c.control("DELETE", "/v1/log").status == 200)
        #expect(c.emulator.requestLog.isEmpty)
        #expect(try c.control("POST", "/v1/reset").status == 200)
        #expect(c.emulator.recordCount(inTable: "Contacts") == 4)
    }

    @Test func clarisIDAndOAuthAcceptance() throws {
        let c = try ControlledEmulator()
        #expect(try c.control("POST", "/v1/claris-id/accept", #"{"token":"cid"}"#).status == 200)
        #expect(try c.data.login(headers: ["Authorization: FMID cid"]).status == 200)
        #expect(try c.control("POST", "/v1/claris-id/revoke", #"{"token":"cid"}"#).status == 200)
        #expect(try c.data.login(headers: ["Authorization: FMID cid"]).code == "212")
        #expect(try c.control("POST", "/v1/oauth/accept", #"{"requestId":"r","identifier":"i"}"#).status == 200)
        #expect(try c.data.login(headers: ["X-FM-Data-OAuth-Request-Id: r", "X-FM-Data-OAuth-Identifier: i"]).status == 200)
    }

    @Test(arguments: [
        ("POST", "/v1/faults", "{"),                                        // malformed JSON
        ("POST", "/v1/faults", "[1]"),                                      // not an object
        ("POST", "/v1/faults", "{}"),                                       // no fault
        ("POST", "/v1/faults", #"{"fault":"meteor"}"#),                     // unknown fault
        ("POST", "/v1/faults", #"{"fault":"gzip","colour":"red"}"#),        // unknown key
        ("POST", "/v1/faults", #"{"fault":"status","body":"x"}"#),          // status missing
        ("POST", "/v1/faults", #"{"fault":"status","status":"503"}"#),      // status not a number
        ("POST", "/v1/faults", #"{"fault":"status","status":99}"#),         // status out of range
        ("POST", "/v1/faults", #"{"fault":"drip","bytesPerSecond":0}"#),
        ("POST", "/v1/faults", #"{"fault":"drip","bytesPerSecond":1.5}"#),
        ("POST", "/v1/faults", #"{"fault":"gzip","count":0}"#),
        ("POST", "/v1/faults", #"{"fault":"gzip","count":true}"#),
        ("POST", "/v1/faults", #"{"fault":"gzip","matching":7}"#),
        ("POST", "/v1/faults", #"{"fault":"fileMakerError"}"#),
        ("POST", "/v1/faults", #"{"fault":"delay","seconds":-1}"#),
        ("POST", "/v1/clock", #"{"advance":-5}"#),
        ("POST", "/v1/clock", #"{"advance":"1"}"#),
        ("POST", "/v1/clock", #"{"ahead":1}"#),
        ("PATCH", "/v1/settings", #"{"serviceTime":-1}"#),
        ("PATCH", "/v1/settings", #"{"serializesSessions":1}"#),
        ("PATCH", "/v1/settings", #"{"maxSessions":2.5}"#),
        ("PATCH", "/v1/settings", #"{"turbo":true}"#),
        ("POST", "/v1/reset", #"{"hard":true}"#),
        ("POST", "/v1/claris-id/accept", "{}"),
        ("POST", "/v1/oauth/accept", #"{"requestId":"r"}"#),
    ])
    func badRequestsAre400(method: String, path: String, body: String) throws {
        let c = try ControlledEmulator()
        let r = try c.control(method, path, body)
        #expect(r.status == 400)
        #expect((r.json["error"] as? String)?.isEmpty == false)
        // Nothing changed.
        #expect(c.emulator.pendingFaultCount == 0)
        #expect(c.emulator.serviceTime == 0 && !c.emulator.serializesSessions && c.emulator.maxSessions == 5)
    }

    @Test func unknownEndpointsAndMethods() throws {
        let c = try ControlledEmulator()
        #expect(try c.control("GET", "/v1/nope").status == 404)
        #expect(try c.control("GET", "/fmi/data/vLatest/productInfo").status == 404)
        let wrong = try c.control("PUT", "/v1/faults", "{}")
        #expect(wrong.status == 405)
        #expect((wrong.json["error"] as? String)?.contains("POST") == true)
        #expect(try c.control("GET", "/v1/%zz").status == 400)
        // The control API never shows up in the Data API's log.
        #expect(c.emulator.requestLog.isEmpty)
    }

    @Test func startControlIsIdempotentAndStops() throws {
        let c = try ControlledEmulator()
        let url = try #require(c.emulator.controlURL)
        #expect(try c.emulator.startControl() == url)
        c.emulator.stopControl()
        #expect(c.emulator.controlURL == nil)
        #expect(throws: (any Error).self) { try HTTPRawClient(port: c.controlPort).readResponse() }
    }

    @Test func redactHexTokens() {
        let token = String(repeating: "ab", count: 26)
        #expect(ControlHandler.redactHexTokens("x/\(token)/y \(token)1") == "x/<token>/y \(token)1")
    }

    @Test func redactSecrets() {
        #expect(ControlHandler.redactSecrets(#"{"fmDataSource":[{"database":"D","username":"u","password" : "p\"w"},{"oAuthIdentifier":"i"}]}"#)
                == #"{"fmDataSource":[{"database":"D","username":"u","password" : "<redacted>"},{"oAuthIdentifier":"<redacted>"}]}"#)
        #expect(ControlHandler.redactSecrets(#"{"password":5,"x":"password"}"#) == #"{"password":5,"x":"password"}"#)
        #expect(ControlHandler.redactSecrets(#"{"password":"unterminated"#) == #"{"password":"<redacted>""#)
    }

    @Test func logLimitAndLoginSecrets() throws {
        let c = try ControlledEmulator()
        let body = #"{"fmDataSource":[{"database":"Other","username":"u","password":"hunter2"}]}"#
        #expect(try c.data.send("POST", "\(c.data.base)/sessions", body: body, headers: ["Authorization: Basic YWRtaW46YWRtaW4="]).status == 200)
        #expect(try c.data.send("GET", "/fmi/data/vLatest/productInfo").status == 200)
        let log = try #require(try c.control("GET", "/v1/log?limit=5").json["requests"] as? [[String: Any]])
        #expect(log.count == 2)
        #expect(!(log[0]["body"] as? String ?? "hunter2").contains("hunter2"))
        let last = try #require(try c.control("GET", "/v1/log?limit=1").json["requests"] as? [[String: Any]])
        #expect(last.map { $0["path"] as? String } == ["/fmi/data/vLatest/productInfo"])
        #expect(try c.control("GET", "/v1/log?limit=-1").status == 400)
    }

    @Test func deeplyNestedJSONIsA400() throws {
        let c = try ControlledEmulator()
        let deep = #"{"fault":"gzip","matching":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "}"
        #expect(try c.control("POST", "/v1/faults", deep).status == 400)
    }
}

@Suite("fm-emulator --control", .enabled(if: fmEmulatorExecutable != nil, "fm-emulator is not built"))
struct ControlExecutableTests {
    @Test func printsTheControlLineAndServesIt() throws {
        let process = try HTTPEmulatorProcess(["--port", "0", "--control-port", "0"])
        defer {
            process.process.terminate()
            _ = process.waitForExit()
        }
        let lines = readLines(process.stdout, count: 2)
        try #require(lines.count == 2)
        #expect(lines[0].hasPrefix("listening on http://127.0.0.1:"))
        #expect(lines[1].hasPrefix("control on http://127.0.0.1:"))
        let port = try #require(URL(string: String(lines[1].dropFirst("control on ".count)))?.port.map(UInt16.init))
        let c = try HTTPRawClient(port: port)
        try c.send("GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try c.readResponse()
        #expect(r.status == 200)
        #expect(String(decoding: r.body, as: UTF8.self).contains(#""database":"Music""#))
    }

    @Test(arguments: [["--control-port"], ["--control-port", "70000"], ["--control-port=x"]])
    func badControlPortsPrintUsage(arguments: [String]) throws {
        let process = try HTTPEmulatorProcess(arguments)
        #expect(process.waitForExit() == 2)
        #expect(process.standardErrorText.contains("usage: fm-emulator"))
    }

    /// Reads `count` lines from `handle` (at most 30 s: a reader thread, abandoned on timeout).
    private func readLines(_ handle: FileHandle, count: Int) -> [String] {
        let result = HTTPOrderLog()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var bytes = Data()
            while bytes.filter({ $0 == 0x0A }).count < count {
                let chunk = handle.readAvailableRetryingInterrupts()
                if chunk.isEmpty { break }
                bytes.append(chunk)
            }
            for line in bytes.split(separator: 0x0A).prefix(count) { result.append(String(decoding: line, as: UTF8.self)) }
            done.signal()
        }
        guard done.wait(timeout: .now() + 300) == .success else { return [] }
        return result.entries
    }
}
