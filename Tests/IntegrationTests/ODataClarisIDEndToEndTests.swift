import Foundation
import Testing
import SwiftFM
import SwiftFMEmulator

/// `FMOData` with Claris ID credentials (FileMaker Cloud): `Authorization: FMID <token>` on every request,
/// against the in-process `Emulator` and `fm-emulator --claris-id` in its own process; an expired token
/// renewed once through the provider; Basic refused in that mode.
@Suite struct ODataClarisIDEndToEndTests {
    private func cognito(_ url: URL) -> FMClarisIDConfiguration {
        let cloud = FMClarisIDConfiguration.fileMakerCloud
        return FMClarisIDConfiguration(userPoolID: cloud.userPoolID, clientID: cloud.clientID, cognitoURL: url)
    }

    private func odataRequests(_ emulator: Emulator) -> [(authorization: String?, status: Int)] {
        emulator.requestLog.filter { $0.decodedPath.contains("/fmi/odata/") }.map { ($0.header("Authorization"), $0.status) }
    }

    @Test func inProcessEmulatorFMIDOnEveryRequestRenewedOnceWhenExpired() async throws {
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        emulator.clarisID = true
        let url = try emulator.start()
        defer { emulator.stop() }
        let credentials = FMCredentials.clarisID(username: "admin", password: "admin", configuration: cognito(url))
        let odata = FMOData(configuration: odataConfiguration(url, credentials: credentials))

        // Async and callback surfaces, one sign-in for both.
        let page = try await odata.records(from: "Customers", query: FMODataQuery(orderBy: [.ascending("code")]))
        #expect(page.rows.compactMap { $0["code"] as? String } == ["ALFKI", "OBR", "ZOE"])
        let (count, code) = await odataOnce(odata) { done in odata.count(of: "Customers", filter: .eq("city", "Berlin")) { done($0, $1) } }
        #expect(code == "0" && count == 1)
        let created = try await odata.createRecord(in: "Customers", fields: ["code": "FMID", "name": "Cloud"])
        #expect(created["code"] as? String == "FMID")
        #expect(emulator.clarisIDSignInCount == 1 && emulator.clarisIDRefreshCount == 0)
        var sent = odataRequests(emulator)
        #expect(sent.count == 3)
        #expect(sent.allSatisfy { $0.authorization?.hasPrefix("FMID ey") == true }, "\(sent.map { $0.authorization })")
        #expect(Set(sent.map { $0.authorization }).count == 1)
        #expect(emulator.loginCount == 0)   // no Data API session: OData has none

        // Two hours later on the server's clock the token has expired: the first request is refused (401),
        // the provider renews the token once (a Cognito refresh) and the request goes again, on both surfaces.
        emulator.advanceClock(by: 7200)
        let (again, againCode) = await odataOnce(odata) { done in odata.record(from: "Customers", key: "FMID") { done($0, $1) } }
        #expect(againCode == "0")
        #expect(again?["name"] as? String == "Cloud")
        #expect(emulator.clarisIDRefreshCount == 1 && emulator.clarisIDSignInCount == 1)
        // (The emulator refuses an expired token before its request log: the log shows the request sent again.)
        sent = odataRequests(emulator)
        try #require(sent.count == 4)
        #expect(sent[3].status == 200 && sent[3].authorization != sent[2].authorization)
        #expect(sent[3].authorization?.hasPrefix("FMID ey") == true)

        emulator.advanceClock(by: 7200)
        #expect(try await odata.deleteRecord(in: "Customers", key: "FMID") == 1)
        #expect(emulator.clarisIDRefreshCount == 2)
        #expect(emulator.recordCount(inTable: "Customers") == 3)

        // Basic credentials, which FileMaker Server takes, are refused while Claris ID is on.
        let basic = FMOData(configuration: odataConfiguration(url))
        let (rows, basicCode) = await odataOnce(basic) { done in basic.records(from: "Customers") { done($0, $1) } }
        #expect(rows == nil && basicCode == "212")
        await #expect(throws: FMError.self) { try await basic.count(of: "Customers") }
    }

    @Test func aTokenTheServerNeverAcceptsIsAskedForOnceMoreThenFails() async throws {
        let emulator = try Emulator(schemaJSON: odataStudioSchema)
        emulator.clarisID = true
        let url = try emulator.start()
        defer { emulator.stop() }
        let asked = Locked<[Bool]>([])
        let provider = FMClarisIDTokenProvider { refresh, done in
            asked.set(asked.get() + [refresh])
            done(.success("not-a-claris-token-\(asked.get().count)"))
        }
        let odata = FMOData(configuration: odataConfiguration(url, credentials: .clarisID(provider)))
        do {
            _ = try await odata.records(from: "Customers")
            Issue.record("a bad token was accepted")
        } catch let error as FMError {
            #expect(error.code == "212" && error.httpStatus == 401)
        }
        #expect(asked.get() == [false, true])
        let sent = odataRequests(emulator)
        #expect(sent.map { $0.authorization } == ["FMID not-a-claris-token-1", "FMID not-a-claris-token-2"])
        #expect(sent.allSatisfy { $0.status == 401 })

        let (value, code) = await odataOnce(odata) { done in odata.metadata { done($0, $1) } }
        #expect(value == nil && code == "212")
        #expect(asked.get() == [false, true, false, true])
    }

    /// The same against `fm-emulator --claris-id` in its own process, the clock moved through its control API.
    @Test func fmEmulatorProcessWithClarisID() async throws {
        let server = try FMEmulatorProcess(schema: odataStudioSchema, arguments: ["--claris-id"])
        defer { server.stop() }
        let credentials = FMCredentials.clarisID(username: "admin", password: "admin", configuration: cognito(server.url))
        let odata = FMOData(configuration: odataConfiguration(server.url, credentials: credentials))

        let page = try await odata.records(from: "Customers", query: FMODataQuery(filter: .startsWith("name", "O'Brien")))
        #expect(page.rows.compactMap { $0["code"] as? String } == ["OBR"])
        let (metadata, code) = await odataOnce(odata) { done in odata.metadata { done($0, $1) } }
        #expect(code == "0" && metadata?.entitySet(named: "Customers") != nil)
        var counters = try await server.control("GET", "v1/claris-id")
        #expect(counters["signIns"] as? Int == 1 && counters["refreshes"] as? Int == 0, "\(counters)")

        _ = try await server.control("POST", "v1/clock", ["advance": 7200])
        let (count, countCode) = await odataOnce(odata) { done in odata.count(of: "Customers") { done($0, $1) } }
        #expect(countCode == "0" && count == 3)
        #expect(try await odata.updateRecord(in: "Customers", key: "ZOE", fields: ["city": "Lyon"]) == 1)
        counters = try await server.control("GET", "v1/claris-id")
        #expect(counters["signIns"] as? Int == 1 && counters["refreshes"] as? Int == 1, "\(counters)")

        let log = try await server.control("GET", "v1/log")
        let entries = (log["requests"] as? [[String: Any]] ?? []).filter { ($0["path"] as? String)?.contains("/fmi/odata/") == true }
        #expect(entries.map { $0["status"] as? Int } == [200, 200, 200, 204], "\(entries)")
        let schemes = entries.map { entry in
            (entry["headers"] as? [[String]] ?? []).first { $0.first?.lowercased() == "authorization" }?.last
        }
        #expect(schemes.allSatisfy { $0 == "FMID <redacted>" }, "\(schemes)")

        let basic = FMOData(configuration: odataConfiguration(server.url))
        let (_, basicCode) = await odataOnce(basic) { done in basic.count(of: "Customers") { done($0, $1) } }
        #expect(basicCode == "212")
    }
}
