import Foundation
import SwiftFM

extension Bench {
    // MARK: Scenario: Claris ID sign-in

    /// The CPU one Claris ID sign-in costs the client: a fresh ``DataAPI`` with `.clarisID(username:password:)`
    /// logs in (Cognito `USER_SRP_AUTH` against `fm-emulator --claris-id` in its own process, then the Data
    /// API login with `FMID`), 20 times after 2 warm-ups; this process's user + system CPU per sign-in
    /// (getrusage), min / median / max. Target: median ≤ 50 ms.
    func clarisID() async throws {
        let cloud = try EmulatorProcess(schema: directory.appendingPathComponent("schema.json"), port: 0, extraArguments: ["--claris-id"])
        defer { cloud.stop() }
        let pool = FMClarisIDConfiguration.fileMakerCloud
        let configuration = FMClarisIDConfiguration(userPoolID: pool.userPoolID, clientID: pool.clientID, cognitoURL: cloud.url)
        var cpu: [Double] = [], wall: [Double] = []
        for round in 0..<22 {
            var settings = FMConfiguration(host: cloud.url.absoluteString, database: "Bench", username: "admin", password: "admin")
            settings.credentials = .clarisID(username: "admin", password: "admin", configuration: configuration)
            let api = DataAPI(configuration: settings)
            let cpuBefore = processCPUSeconds(), start = now()
            _ = try await api.login()
            let cpuAfter = processCPUSeconds(), end = now()
            if round >= 2 {
                cpu.append(cpuAfter - cpuBefore)
                wall.append(Double(end - start) / 1e9)
            }
            try? await api.logout()
        }
        cpu.sort()
        wall.sort()
        let ms = { (value: Double) in String(format: "%.1f ms", value * 1000) }
        say("clarisid, one Claris ID sign-in (SRP against fm-emulator --claris-id in its own process, then the FMID login), 20 sign-ins:")
        say("  client CPU per sign-in: median \(ms(cpu[cpu.count / 2])) (min \(ms(cpu[0])), max \(ms(cpu[cpu.count - 1]))); target ≤ 50 ms")
        say("  wall time per sign-in:  median \(ms(wall[wall.count / 2])) (the emulator's side of SRP and its RS256 tokens included)")
    }
}

/// This process's user + system CPU time so far, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}
