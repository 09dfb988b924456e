import Foundation
import Testing
@testable import SwiftFM

/// Contract: the `description` (and `debugDescription`) of every public type that shows a caller's or a server's text
/// (a host, a database, a user name, a data source, a script's result, a layout, an error's message, a token store's
/// key or path, a TLS file, a Claris ID pool) shows it on one line: a line break, an escape sequence (ANSI colours) or a
/// bidirectional control in that text is replaced, as ``FMError/serverText(_:limit:)`` replaces them in a server's
/// words, so that printing a value cannot forge a line in a log, colour it or reorder it.
@Suite("Descriptions show a caller's and a server's text on one line")
struct DescriptionsShowCallerAndServerTextOnOneLineTests {
    /// A line break, a forged log line, an ANSI colour, a right-to-left override.
    static let hostile = "x\r\n[error] forged line\u{1B}[31m red \u{202E}desrever\u{2028}"

    static func isOneLine(_ text: String) -> Bool {
        !text.unicodeScalars.contains {
            $0.properties.generalCategory == .control || $0.properties.isBidiControl
                || $0.properties.generalCategory == .lineSeparator || $0.properties.generalCategory == .paragraphSeparator
        }
    }

    static var descriptions: [(String, String)] {
        let h = hostile
        var configuration = FMConfiguration(host: "fms.example.com" + h, database: "Music" + h, username: "admin" + h, password: "pw")
        configuration.dataSources = [FMDataSource(database: "Other" + h, username: "user" + h, password: "pw2")]
        configuration.tls = FMTLSOptions(caCertificates: URL(fileURLWithPath: "/tmp/ca" + h), clientCertificate: URL(fileURLWithPath: "/tmp/c" + h))
        let api = DataAPI(configuration: configuration)
        return [
            ("FMConfiguration", configuration.description), ("FMConfiguration debug", configuration.debugDescription),
            ("DataAPI", api.description), ("DataAPI debug", api.debugDescription),
            ("FMOData", FMOData(sharing: api).description), ("FMOData debug", FMOData(sharing: api).debugDescription),
            ("FMCredentials", FMCredentials.basic(username: "admin" + h, password: "pw").description),
            ("FMDataSource", FMDataSource(database: "Other" + h, username: "user" + h, password: "pw").description),
            ("FMODataScriptResult", FMODataScriptResult(code: "0", resultParameter: "result" + h).description),
            ("FMCallStart", FMCallStart(endpoint: "GET" + h, method: "GET", layout: "Layout" + h, database: "Music" + h,
                                        serverAddress: "fms.example.com" + h).description),
            ("FMCallStart table", FMCallStart(endpoint: "GET", method: "GET", table: "Table" + h, database: "Music").description),
            ("FMCallMetrics", FMCallMetrics(endpoint: "GET" + h, queueWait: 0, duration: 0, code: "0" + h, attempts: 1,
                                            bytesSent: 0, bytesReceived: 0).description),
            ("FMPoolEvent", FMPoolEvent(kind: .closed, session: 0, code: "1" + h, reason: "idle" + h).description),
            ("FMError", FMError(code: "-1002", message: "message" + h, underlying: "underlying" + h).description),
            ("FMUserDefaultsTokenStore", FMUserDefaultsTokenStore(tokenKey: "key" + h, expiryKey: "expiry" + h).description),
            ("FMFileTokenStore", FMFileTokenStore(url: URL(fileURLWithPath: "/tmp/token" + h)).description),
            ("FMTLSOptions", configuration.tls.description),
            ("FMClarisIDConfiguration", FMClarisIDConfiguration(userPoolID: "pool" + h, clientID: "client" + h,
                                                                cognitoURL: URL(string: "https://cognito.example.com/")!).description),
        ]
    }

    /// Failed before: each description printed the text as it was, line break included.
    @Test func everyDescriptionIsOneLine() {
        for (name, text) in Self.descriptions {
            #expect(Self.isOneLine(text), "\(name): \(text.debugDescription)")
            #expect(text.contains("forged line"), "\(name) still shows the text: \(text.debugDescription)")
        }
    }

    /// Held: an ordinary configuration is shown as it was.
    @Test func ordinaryTextIsShownAsGiven() {
        let configuration = FMConfiguration(host: "https://fms.example.com:8443", database: "Müsic Ü", username: "admin", password: "pw")
        #expect(configuration.description.hasPrefix("FMConfiguration(host: https://fms.example.com:8443, database: Müsic Ü, "
                                                      + "credentials: FMCredentials.basic(username: admin, password: <redacted>), "),
                "\(configuration)")
    }
}
