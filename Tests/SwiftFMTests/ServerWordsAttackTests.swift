import Foundation
import Testing
@testable import SwiftFM

/// The contract, attacked: whatever a hostile or broken FileMaker Server or OData service writes where a code or a
/// message goes, the client neither traps nor hangs, and the caller gets either FileMaker's code (exactly one
/// way of writing it: an optional `-` and 1 to 9 digits without leading zeros, `"0"` for success) or `-1007`;
/// never a success code for an error status, never an empty code, never a second spelling of a code (`"00"`,
/// `"-0"`, `"0401"`). Every word of the server's in an error (FileMaker's message; the record ids, portal, field,
/// type and host names an error names; a decoding error's `underlying` text) is printable on one line: no
/// control, line-separator or bidirectional-control character (U+202E could reorder the rest of a caller's log
/// line), and short. A password, Basic value or token the server echoes never reaches the caller's error, and no
/// log line carries any of this.
@Suite("A hostile server's code and message (attacks)")
struct ServerWordsAttackTests {
    static func dataAPI(code: String, message: String = "m") -> Data { ServerWordsTests.dataAPI(code: code, message: message) }
    static func odata(code: String, message: String = "m") -> Data { ServerWordsTests.odata(code: code, message: message) }

    /// The code of `Envelope.response` (a 200 answer), or `"ok"` when it returned.
    static func code200(_ body: Data) -> String {
        do { _ = try Envelope.response(from: body, status: 200); return "ok" } catch { return error.code }
    }

    /// The code of `ODataEnvelope.script`, or `"ok <code>"`.
    static func scriptCode(_ body: String) -> String {
        do { return "ok " + (try ODataEnvelope.script(Data(body.utf8), status: 200)).code } catch { return error.code }
    }

    static func isOneLine(_ text: String) -> Bool {
        !text.unicodeScalars.contains {
            [.control, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) || $0.properties.isBidiControl
        }
    }

    // MARK: findings (each failed before its fix)

    /// `abs(Int.min)` trapped: a code of -9223372036854775808 (a JSON number) crashed the process that read it.
    @Test("A code of Int.min or Int.max is -1007, not a trap", arguments: ["-9223372036854775808", "9223372036854775807", "-9223372036854775809"])
    func extremeIntegerCodes(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(Self.code200(Self.dataAPI(code: code)) == FMError.ClientCode.malformedResponse)
        #expect(Self.scriptCode(#"{"scriptResult":{"code":\#(code)}}"#) == FMError.ClientCode.malformedResponse)
    }

    /// `"00"`, `"-0"` and `"0401"` passed as codes: an error status then completed with a code whose `numericCode`
    /// is 0 (success), and a 200 answer with `"-0"` failed with code `"-0"`; `"0401"` is not `"401"` to a caller.
    @Test("A second spelling of a code is -1007", arguments: [#""00""#, #""-0""#, #"" -0 ""#, #""0401""#, #""000000000""#, #""-00952""#])
    func secondSpellings(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(Self.code200(Self.dataAPI(code: code)) == FMError.ClientCode.malformedResponse)
        #expect(Self.scriptCode(#"{"scriptResult":{"code":\#(code)}}"#) == FMError.ClientCode.malformedResponse)
        let bare = code.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        let xml = Data("<m:error><m:code>\(bare)</m:code><m:message>m</m:message></m:error>".utf8)
        #expect(ODataEnvelope.error(status: 500, body: xml).code == FMError.ClientCode.notJSON, "not read as FileMaker's")
    }

    /// A 200 answer whose code was `""` failed with the code `""` (neither FileMaker's nor the client's), on the
    /// Data API's reader and the found-set decoder's; an OData script's `""` was its code.
    @Test("An empty code in a 200 answer is -1007")
    func emptyCodeIn200() {
        let body = Self.dataAPI(code: #""""#)
        #expect(Self.code200(body) == FMError.ClientCode.malformedResponse)
        let found = Data(#"{"response":{"data":[]},"messages":[{"code":"","message":"m"}]}"#.utf8)
        do {
            _ = try FileMakerDecoder().foundSet([String: String].self, body: found, status: 200, checkMessages: true)
            Issue.record("an empty code was a success")
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse)
        }
        #expect(Self.scriptCode(#"{"scriptResult":{"code":""}}"#) == FMError.ClientCode.malformedResponse)
        #expect(Self.scriptCode(#"{"scriptResult":"r","scriptError":""}"#) == FMError.ClientCode.malformedResponse)
    }

    /// U+202E and its kin passed: a message could reverse the rest of the caller's log line it was written into.
    @Test("Bidirectional controls in a message are replaced")
    func bidiControls() {
        let message = "No records\u{202E}0 edoc\u{202C} \u{2066}x\u{2069}\u{200F}"
        for error in [Envelope.error(status: 500, body: Self.dataAPI(code: #""401""#, message: message)),
                      ODataEnvelope.error(status: 500, body: Self.odata(code: #""401""#, message: message)),
                      ODataEnvelope.error(status: 500, body: Data("<m:error><m:code>401</m:code><m:message>\(message)</m:message></m:error>".utf8))] {
            #expect(error.code == "401")
            #expect(Self.isOneLine(error.message), "\(error.message.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(error.message.hasPrefix("No records"))
        }
    }

    /// A record id, a portal's name and a field's name are the server's words too: a decoding error wrote them into
    /// its message as they came (line breaks, megabytes).
    @Test("A decoding error's message names the server's record, portal and field printably and briefly")
    func decodingErrorsNameTheServersWordsPrintably() {
        let forged = "1\r\n[SwiftFM] login succeeded\u{202E}" + String(repeating: "x", count: 100_000)
        let name = ServerWordsTests.jsonString(forged)
        let bodies = [
            #"{"response":{"data":[{"recordId":\#(name),"modId":"1"}]},"messages":[{"code":"0"}]}"#,
            #"{"response":{"data":[{"recordId":"1","modId":"1","fieldData":{},"portalData":{\#(name):5}}]},"messages":[{"code":"0"}]}"#,
            #"{"response":{"data":[{"recordId":"1","modId":"1","fieldData":{\#(name):{"a":1}}}]},"messages":[{"code":"0"}]}"#,
        ]
        for body in bodies {
            do {
                _ = try FileMakerDecoder().foundSet([String: Int].self, body: Data(body.utf8), status: 200)
                Issue.record("decoded: \(body.prefix(120))")
            } catch {
                #expect(error.code == FMError.ClientCode.malformedResponse)
                #expect(Self.isOneLine(error.description) && error.description.count < 2_000, "\(error.description.prefix(300))")
            }
        }
        // A portal row read by the caller names its record id the same way.
        let row = FMPortalRow(recordId: forged, modId: nil, fields: [forged: .object(["a": .number(1)])])
        do {
            _ = try row.decode([String: Int].self)
            Issue.record("decoded")
        } catch let error as FMError {
            #expect(Self.isOneLine(error.description) && error.description.count < 2_000, "\(error.description.prefix(300))")
        } catch {
            Issue.record("\(error)")
        }
        // OData's $metadata names its entity types and sets the same way.
        let metadata = Data(#"{"$Version":"4.01","NS":{\#(name):{"$Kind":5}}}"#.utf8)
        do {
            _ = try ODataMetadataReader.metadata(metadata, status: 200)
            Issue.record("read")
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse)
            #expect(Self.isOneLine(error.description) && error.description.count < 2_000, "\(error.description.prefix(300))")
        }
        // OData's typed rows name the field the same way.
        let rows = Data(#"{"value":[{\#(name):{"a":1}}]}"#.utf8)
        do {
            _ = try ODataEnvelope.typedPage([String: Int].self, rows, status: 200)
            Issue.record("decoded")
        } catch {
            #expect(Self.isOneLine(error.description) && error.description.count < 2_000, "\(error.description.prefix(300))")
        }
    }

    /// A server that echoes the request's secrets into its message (a gateway that quotes the `Authorization`
    /// header, a script that returns the token): `FMError.description` promises no credentials and no tokens, and
    /// the message came to the caller as the server wrote it, password, Basic value and session token included.
    @Test("A message that echoes the password, the Basic value or the token reaches the caller without them")
    func echoedSecrets() async {
        let basic = basicValue("admin", "s3cret-pass")
        let message = "Invalid password s3cret-pass (Basic \(basic)) for token \(Bodies.token)"
        let harness = Harness { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(500, String(decoding: Self.dataAPI(code: #""101""#, message: message), as: UTF8.self))
        }
        do {
            _ = try await harness.api.getRecord(layout: "Contacts", recordId: 1)
            Issue.record("a value")
        } catch let error as FMError {
            #expect(error.code == "101")
            for secret in ["s3cret-pass", basic, Bodies.token] {
                #expect(!error.description.contains(secret), "\(error)")
            }
            #expect(error.message.hasPrefix("Invalid password "))
        } catch {
            Issue.record("\(error)")
        }
        // A secret the 600-character cut splits ("…s3cret-pas…") is hidden too: before, all but its tail came through.
        for secret in ["s3cret-pass", Bodies.token] {
            let padded = String(repeating: "x", count: 600 - secret.count + 1) + secret + " and more"
            let cut = Harness { request in
                isLogin(request) ? .json(200, Bodies.login()) : .json(500, String(decoding: Self.dataAPI(code: #""101""#, message: padded), as: UTF8.self))
            }
            do {
                _ = try await cut.api.getRecord(layout: "Contacts", recordId: 1)
                Issue.record("a value")
            } catch let error as FMError {
                #expect(error.code == "101" && error.message.hasSuffix("…") && error.message.hasPrefix("xxx"))
                #expect(!error.description.contains(secret.prefix(3)), "\(error.message.suffix(40))")
            } catch {
                Issue.record("\(error)")
            }
        }
        // OData (Basic on every call) alike.
        let odataHarness = Harness { request in
            .json(400, String(decoding: Self.odata(code: #""8309""#, message: "got \(request.header("Authorization") ?? "") s3cret-pass"), as: UTF8.self))
        }
        do {
            _ = try await FMOData(sharing: odataHarness.api).records(from: "contacts")
            Issue.record("a value")
        } catch let error as FMError {
            #expect(error.code == "8309" && error.message.hasPrefix("got "))
            for secret in ["s3cret-pass", basic] {
                #expect(!error.description.contains(secret), "\(error)")
            }
        } catch {
            Issue.record("\(error)")
        }
        // A legacy call's own token and Basic value (no configured credentials) are hidden the same way: the server
        // echoes the Authorization header it got, and the password in it.
        let legacy = Harness(configuration: FMConfiguration(host: "fms.example.com", database: "Contacts", credentials: nil)) { request in
            let authorization = request.header("Authorization") ?? ""
            let password = authorization.hasPrefix("Basic ") ? "s3cret-pass" : ""
            return .json(500, String(decoding: Self.dataAPI(code: #""212""#, message: "got \(authorization) \(password)"), as: UTF8.self))
        }
        let codes = Recorder<FMError?>(expecting: 2)
        legacy.api.perform(LegacyCall.login(encodedAuth: basic).endpoint(token: "")) { codes.record($0.testError) }
        legacy.api.perform(LegacyCall.validate.endpoint(token: Bodies.token)) { codes.record($0.testError) }
        for error in await codes.value() {
            #expect(error?.code == "212" && error?.message.hasPrefix("got ") == true)
            for secret in ["s3cret-pass", basic, Bodies.token] {
                #expect(!(error?.description.contains(secret) ?? true), "\(String(describing: error))")
            }
        }
    }

    /// A container's URL and a redirect's `Location` are the server's words, and `URL.host` decodes their
    /// percent-escapes: a host of `files%0d%0a…` put a line break into "Connection to … failed", "The container
    /// was not found at …" and the wrong-scheme message.
    @Test("A host the server named is printable in every message that names it")
    func serverNamedHosts() throws {
        let url = try #require(URL(string: "http://files%0d%0a%5BSwiftFM%5D%20ok%E2%80%AE.example/x"))
        #expect(url.host?.contains("\r\n") == true, "the attack needs URL.host to decode")
        let texts = [
            FMError.address(of: url),
            FMError.fromTransport(URLError(.cannotFindHost), url: url).description,
            FMError.timeout(url, after: nil).description,
            FMError.wrongScheme(url, use: "https", underlying: "u").description,
            FMError.wrongScheme(url, use: "http", underlying: "u").description,
        ]
        for text in texts {
            #expect(Self.isOneLine(text) && text.contains("files"), "\(text)")
        }
    }

    /// A transport's text is partly the server's: curl quotes a certificate's subject name ("SSL: certificate
    /// subject name '…' does not match target host name"), and it went into the message ("certificate not
    /// trusted: …", "TLS handshake failed: …") and `underlying` as it came.
    @Test("A transport's text (which may quote the server's certificate) is printable in the error")
    func transportTexts() throws {
        let said = "SSL: certificate subject name 'evil\r\n[SwiftFM] ok\u{202E}' does not match target host name 'fms.example.com'"
        let url = try #require(URL(string: "https://fms.example.com/fmi/data/vLatest/productInfo"))
        for code in [URLError.Code.secureConnectionFailed, .serverCertificateUntrusted, .badServerResponse, .networkConnectionLost] {
            let error = FMError.fromTransport(URLError(code, userInfo: [NSLocalizedDescriptionKey: said]), url: url)
            #expect(Self.isOneLine(error.description) && error.description.contains("subject name"), "\(error)")
        }
    }

    /// A server's `"-1003"` was FileMaker's code to the reader: the caller's error said `isClientSide` (a failure
    /// that never got an answer), and a login answered so was retried as a failure in transport.
    /// (OData's own negative codes are the server's: ``ServerWordsTests``.)
    @Test("A client-side code from a Data API server is -1007", arguments: [#""-1003""#, "-1004", #""-1012""#, #"" -1099 ""#, "-1000"])
    func clientSideCodes(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(Self.code200(Self.dataAPI(code: code)) == FMError.ClientCode.malformedResponse)
        let found = Data(#"{"response":{"data":[]},"messages":[{"code":\#(code),"message":"m"}]}"#.utf8)
        do {
            _ = try FileMakerDecoder().foundSet([String: String].self, body: found, status: 200, checkMessages: true)
            Issue.record("read: \(code)")
        } catch {
            #expect(error.code == FMError.ClientCode.malformedResponse)
        }
    }

    @Test("A login answered with a client-side code is neither retried nor a failure in transport")
    func loginAnsweredWithAClientSideCode() {
        let h = Harness { request in
            isLogin(request) ? .json(500, String(decoding: Self.dataAPI(code: #""-1003""#), as: UTF8.self)) : .json(200, Bodies.ok)
        }
        let read = Recorder<Result<String, FMError>>()
        h.api.perform(TestEndpoints.records()) { read.record($0) }
        let error = read.wait().first?.testError
        #expect(error?.code == FMError.ClientCode.malformedResponse && error?.isClientSide == true && error?.httpStatus == 500)
        #expect(h.stub.count("POST", "/sessions") == 1)
        #expect(h.stub.count("GET", "/records") == 0)
    }

    /// `scriptError` was taken as the server wrote it: text with line breaks, a second spelling of success
    /// (`"00"`, which `succeeded` reads as a failure), a client-side code; and a value of another type (an array, an
    /// object) read as absent, so as `"0"`: a script's failure reported as its success.
    @Test("A script error that is not a FileMaker code is -1007", arguments: [
        #""0\r\nX-Forged: 1""#, #""00""#, #""-1003""#, "[3]", #"{"code":"3"}"#, "true", "1.5", #""OK""#,
        // attack17: `""` (or only blanks) was passed on as the script's code `""`, neither "0" nor a FileMaker code.
        #""""#, #""   ""#, #""\t""#,
    ])
    func scriptErrorsThatAreNoCode(_ value: String) {
        for suffix in ["", ".prerequest", ".presort"] {
            let found = Data(#"{"response":{"data":[],"scriptError\#(suffix)":\#(value)},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
            do {
                _ = try FMFoundSet(responseBody: found)
                Issue.record("read: \(value)")
            } catch let error as FMError {
                #expect(error.code == FMError.ClientCode.malformedResponse && Self.isOneLine(error.description))
            } catch {
                Issue.record("\(error)")
            }
            do {
                _ = try FileMakerDecoder().foundSet([String: String].self, body: found, status: 200, checkMessages: true)
                Issue.record("read by the decoder: \(value)")
            } catch {
                #expect(error.code == FMError.ClientCode.malformedResponse)
            }
            let created = Data(#"{"recordId":"1","modId":"0","scriptError\#(suffix)":\#(value)}"#.utf8)
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(FMRecordReference.self, from: created) }
        }
        let run = Data(#"{"scriptResult":"r","scriptError":\#(value)}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(FMScriptResult.self, from: run) }
    }

    @Test("A script error that is a FileMaker code is read as one, spaces and a number's spelling aside")
    func scriptErrorsThatAreCodes() throws {
        let found = Data(#"{"response":{"data":[],"scriptResult":"r","scriptError":" 3 ","scriptError.prerequest":0,"scriptResult.presort":"p"},"messages":[{"code":"0","message":"OK"}]}"#.utf8)
        let scripts = try FMFoundSet(responseBody: found).scripts
        #expect(scripts == FMScriptResults(script: FMScriptResult(result: "r", error: "3"), prerequest: FMScriptResult(result: nil, error: "0"),
                                           presort: FMScriptResult(result: "p", error: "0")))
        let typed = try FileMakerDecoder().foundSet([String: String].self, body: found, status: 200, checkMessages: true).scripts
        #expect(typed == scripts)
        let run = try JSONDecoder().decode(FMScriptResult.self, from: Data(#"{"scriptResult":null,"scriptError":"-1"}"#.utf8))
        #expect(run == FMScriptResult(result: nil, error: "-1") && !run.succeeded)
    }

    // MARK: attack17 (findings: each failed before its fix)

    /// An OData script's code in the client-side range (`-1000` … `-1099`) was the script's code: a script's own
    /// error is a FileMaker code (`Get(LastError)`), never one of OData's engine codes, which come in an error
    /// body; a caller comparing with `FMError.ClientCode.transport` read `-1003` as a failure in transport.
    @Test("attack17: an OData script's client-side code is -1007", arguments: ["-1003", #""-1020""#, #"" -1099 ""#, "-1000", #""-1007""#])
    func odataScriptClientSideCodes(_ code: String) async {
        #expect(Self.scriptCode(#"{"scriptResult":{"code":\#(code),"resultParameter":"r"}}"#) == FMError.ClientCode.malformedResponse)
        #expect(Self.scriptCode(#"{"scriptResult":"r","scriptError":\#(code)}"#) == FMError.ClientCode.malformedResponse)
        let setup = ODataHarness(retry: .none) { _ in .json(200, #"{"scriptResult":{"code":\#(code),"resultParameter":"r"}}"#) }
        do {
            let result = try await setup.odata.runScript("S")
            Issue.record("read \(code) as \(result)")
        } catch let error as FMError {
            #expect(error.code == FMError.ClientCode.malformedResponse && error.isClientSide && error.httpStatus == 200)
        } catch {
            Issue.record("\(error)")
        }
    }

    /// An OData answer whose own code is `-1003` (a 503, retried) was taken for a failure in transport by the retry
    /// stage (``Classifier/isConnectionFailure(_:)``, ``Classifier/serverAway(_:)``): the server's message got
    /// "; retried 2 times over 0.0 s", the note a connection failure gets, and the first-contact rule applied to it.
    @Test("attack17: an OData answer's -1003 is no connection failure to the retry stage")
    func odataTransportCodeIsNoConnectionFailure() async {
        let attempts = Locked(0)
        let setup = ODataHarness(retry: FMRetryPolicy(maxAttempts: 3, initialDelay: 0, maxDelay: 0)) { _ in
            attempts.withLock { $0 += 1 }
            return .json(503, #"{"error":{"code":"-1003","message":"busy"}}"#)
        }
        do {
            _ = try await setup.odata.records(from: "x")
            Issue.record("no error")
        } catch let error as FMError {
            #expect(error.code == "-1003" && !error.isClientSide && error.httpStatus == 503)
            #expect(error.message == "busy", "\(error)")
        } catch {
            Issue.record("\(error)")
        }
        #expect(attempts.value == 3, "a 503 is retried")
        #expect(!Classifier.isConnectionFailure(ODataEnvelope.error(status: 503, body: Self.odata(code: #""-1003""#))))
        #expect(!Classifier.serverAway(ODataEnvelope.error(status: 500, body: Self.odata(code: #""-1003""#))))
        #expect(Classifier.isConnectionFailure(FMError.transport("URLError(-1004)")), "the client's own -1003 is one")
    }

    /// An OData 401 whose own code is `-1006` or `-1007` read as an unreadable 401 (a session lost: a new token and a
    /// replay): the client's codes mean that, a server's do not.
    @Test("attack17: an OData 401 with the server's own -1007 is no lost session")
    func odataClientRangeCodeIsNoLostSession() {
        for code in [#""-1006""#, "-1007"] {
            #expect(!Classifier.isSessionLost(ODataEnvelope.error(status: 401, body: Self.odata(code: code))), "\(code)")
        }
        #expect(Classifier.isSessionLost(ODataEnvelope.error(status: 401, body: Data("<html>expired</html>".utf8))), "the client's -1006 is one")
        #expect(Classifier.isSessionLost(Envelope.error(status: 401, body: Self.dataAPI(code: #""-1007""#))), "so is a Data API 401 read as -1007")
    }

    // MARK: attack17 (guards: held before)

    /// OData's negative codes and a script's negative FileMaker codes outside the client range still pass.
    @Test("attack17: an OData script's other negative codes pass")
    func odataScriptOtherNegativeCodes() {
        #expect(Self.scriptCode(#"{"scriptResult":{"code":-1,"resultParameter":"r"}}"#) == "ok -1")
        #expect(Self.scriptCode(#"{"scriptResult":"r","scriptError":"-10000"}"#) == "ok -10000")
        #expect(Self.scriptCode(#"{"scriptResult":{"code":"-999"}}"#) == "ok -999")
    }

    /// The server's mark on an OData error survives everything that copies the error on its way to the caller:
    /// the redaction of echoed secrets, the completion's ``FMError/current``, the async throw, a retried read; and
    /// equality ignores it (a caller's literal error equals the server's).
    @Test("attack17: an OData error stays the server's through redaction, FMError.current and retries")
    func odataErrorsKeepTheMark() async {
        let attempts = Locked(0)
        let setup = ODataHarness { _ in
            attempts.withLock { $0 += 1; return $0 } == 1
                ? .json(503, #"{"error":{"code":"-1020","message":"busy"}}"#)
                : .json(404, #"{"error":{"code":"-1020","message":"Table 'x' not defined (s3cret-pass)"}}"#)
        }
        let current = Locked<FMError?>(nil)
        let (value, code) = await setup.run { odata, done in
            odata.records(from: "x") { page, code in
                current.withLock { $0 = FMError.current }
                done(page, code)
            }
        }
        #expect(value == nil && code == "-1020")
        let seen = current.value
        #expect(seen?.isClientSide == false && seen?.httpStatus == 404, "\(String(describing: seen))")
        #expect(seen?.message.contains("s3cret-pass") == false && seen?.message.contains("<redacted>") == true, "\(String(describing: seen))")
        #expect(attempts.value == 2, "the 503 was retried")
        do {
            _ = try await setup.odata.records(from: "x")
            Issue.record("no error")
        } catch let error as FMError {
            #expect(!error.isClientSide && error.code == "-1020" && !error.message.contains("s3cret-pass"))
            #expect(error == FMError(code: "-1020", message: error.message, httpStatus: 404), "equality ignores the mark")
            #expect(FMError(code: "-1020", message: error.message, httpStatus: 404).isClientSide, "a caller's own error is the client's")
        } catch {
            Issue.record("\(error)")
        }
        for body in [#"{"error":{"code":-1023,"message":"m"}}"#, "<m:error><m:code>-1023</m:code><m:message>m</m:message></m:error>"] {
            var error = ODataEnvelope.error(status: 404, body: Data(body.utf8))
            error.message = "rewritten"
            error.underlying = "u"
            #expect(error.code == "-1023" && !error.isClientSide, "a rewritten message keeps the mark: \(body)")
        }
        #expect(!ODataEnvelope.error(status: 404, body: Data(#"{"error":{"code":"-1023","message":"m"}}"#.utf8)).noting("retried once").isClientSide)
    }

    /// The legacy surfaces (`DataAPI.swift` eras, SwiftFM 2.x) read through the same envelope: a server's client-range
    /// code is `-1007` in their completions' code too, on a 200 answer and an error status alike.
    @Test("attack17: a legacy completion's code for a server's client-range code is -1007", arguments: [#""-1003""#, "-1010", #""-1099""#])
    func legacyClientSideCodes(_ code: String) {
        let body = Self.dataAPI(code: code)
        do {
            _ = try LegacyCall.decodeEnvelope(Endpoint<LegacyJSON>.Response(status: 200, headers: [:], body: body))
            Issue.record("a legacy call read \(code) as a success")
        } catch let error as FMError {
            #expect(LegacyOutcome(.failure(error)).code == FMError.ClientCode.malformedResponse)
        } catch {
            Issue.record("\(error)")
        }
        let outcome = LegacyOutcome(.failure(Envelope.error(status: 500, body: body)))
        #expect(outcome.code == FMError.ClientCode.malformedResponse && !outcome.sessionLost && outcome.error?.httpStatus == 500)
    }

    /// A GET's method is left unset (the request's default): every method reaches the transport as the endpoint
    /// says, a request built after one of another method included, and every legacy call keeps its endpoint's.
    @Test("attack17: the methods sent are the endpoints' own, whatever the wrapper")
    func methodsAreTheEndpoints() throws {
        let configuration = FMConfiguration(host: "fms.example.com", database: "Contacts", username: "admin", password: "pw")
        for method in [Endpoint<Void>.Method.get, .post, .patch, .delete] {
            let request = try RequestBuilder.request(for: Endpoint<Void>(method, .database, ["layouts", "L", "records"]) { _ in },
                                                     configuration: configuration, authorization: nil).get()
            #expect(request.httpMethod == method.rawValue)
            #expect(FMTransportRequest(urlRequest: request).description.hasPrefix("FMTransportRequest(\(method.rawValue) "))
            // A request built after one of another method is its own (nothing is reused between builds).
            let get = try RequestBuilder.request(for: TestEndpoints.records(auth: .none), configuration: configuration, authorization: nil).get()
            #expect(get.httpMethod == "GET")
        }
        let calls: [(LegacyCall, String)] = [
            (.login(encodedAuth: "YTpi"), "POST"), (.logout(token: "t"), "DELETE"), (.validate, "GET"),
            (.create(layout: "L", payload: [:]), "POST"), (.duplicate(layout: "L", recordId: 1), "POST"),
            (.getRecords(layout: "L", offset: nil, limit: nil, extra: []), "GET"), (.getRecord(layout: "L", recordId: 1), "GET"),
            (.find(layout: "L", payload: ["query": [["a": "1"]]]), "POST"), (.edit(layout: "L", recordId: 1, payload: ["fieldData": ["a": "1"]], modId: nil), "PATCH"),
            (.delete(layout: "L", recordId: 1), "DELETE"), (.globals(payload: ["globalFields": ["T::g": "1"]]), "PATCH"),
            (.productInfo, "GET"), (.databases, "GET"), (.layouts, "GET"), (.layoutMetadata(layout: "L"), "GET"), (.scripts, "GET"),
            (.runScript(layout: "L", script: "S", parameter: nil), "GET"),
            (.upload(layout: "L", recordId: 1, field: "F", fileName: "a.txt", mimeType: nil, data: Data("x".utf8)), "POST"),
        ]
        for (call, method) in calls {
            let endpoint = call.endpoint(token: "t")
            #expect(endpoint.method.rawValue == method, "\(call)")
            if endpoint.invalid == nil {
                let request = try RequestBuilder.request(for: endpoint, configuration: configuration, authorization: "Bearer t").get()
                #expect((request.httpMethod ?? "GET") == method, "\(call)")
            }
        }
    }

    #if canImport(Glibc)
    /// A field repeated in ``FMCurlTransport``'s answer head, in any case and with empty values, is one field: every
    /// value, in order, joined with `", "`, under the first one's spelling; many repeats lose none. (corelibs'
    /// `HTTPURLResponse` keeps one field per spelling, so ``FMURLSessionTransport`` on Linux is not held to this.)
    @Test("attack17: a repeated answer header keeps every value, whatever the case")
    func repeatedAnswerHeaders() async throws {
        let repeats = (0..<300).map { "x-many: \($0)\r\n" }.joined()
        let answer = "HTTP/1.1 200 OK\r\nX-Rep: a\r\nx-rep: b\r\nX-Rep:\r\nX-REP:   c  \r\n" + repeats
            + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        let server = HostileServer { head, _ in
            HostileServer.isLogin(head) ? .answer(HostileServer.json(#"{"response":{"token":"t"},"messages":[{"code":"0","message":"OK"}]}"#))
                : .answer(answer)
        }
        defer { server.stop() }
        var configuration = FMConfiguration(host: server.url, database: "DB", username: "admin", password: "pw", timeout: 60)
        configuration.retry = .none
        let api = DataAPI(configuration: configuration, transport: FMCurlTransport(idleTimeout: 60), tokenStore: FMMemoryTokenStore())
        let endpoint = Endpoint<[String: String]>(.get, .database, ["layouts", "L", "records"]) { response in response.headers }
        let headers = try await api.bridge(endpoint)
        let rep = headers.filter { $0.key.lowercased() == "x-rep" }
        #expect(rep.count == 1 && rep.values.first == "a, b, , c", "\(rep)")
        let many = headers.filter { $0.key.lowercased() == "x-many" }
        #expect(many.count == 1 && many.values.first == (0..<300).map(String.init).joined(separator: ", "))
    }
    #endif

    // MARK: guards (held before)

    /// Codes of every other shape: -1007 on both envelopes, never a trap.
    @Test("Codes of any other shape are -1007", arguments: [
        #""+1""#, #""１２""#, #""٣""#, #""1\u0000""#, "1e400", "-1e400", "1.5", "null", "[1]", #"{"a":1}"#, "false",
        #""9223372036854775808""#, "99999999999999999999999", "1000000000", "-1000000000", "1e1000000",
        "0.000000000000000000000000000000000000000000000001", String(repeating: "9", count: 1_000_000),
    ])
    func otherShapes(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(Self.code200(Self.dataAPI(code: code)) == FMError.ClientCode.malformedResponse)
    }

    /// A JSON number that is zero in any spelling is success's `"0"`: on an error status, -1007.
    @Test("Zero as a number, in any spelling, is never an error's code", arguments: ["0", "-0", "0.0", "-0.0", "0e5"])
    func zeroNumbers(_ code: String) {
        #expect(Envelope.error(status: 500, body: Self.dataAPI(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(ODataEnvelope.error(status: 500, body: Self.odata(code: code)).code == FMError.ClientCode.malformedResponse)
        #expect(Self.code200(Self.dataAPI(code: code)) == "ok")
    }

    /// An envelope of the wrong shape, a second message hiding behind a success, nesting past any limit: -1007.
    @Test("Envelopes of the wrong shape are -1007")
    func wrongShapes() {
        let deep = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let bodies = [
            #"{"messages":[],"response":{}}"#, #"{"messages":{"code":"401"},"response":{}}"#, #"{"messages":["401"]}"#,
            #"{"messages":[{"code":"0"},{"code":"401","message":"second"}],"response":{}}"#, #"{"messages":[{"code":"0"}],"response":[]}"#,
            #"{"error":{"code":{"value":"401"}}}"#, #"{"error":"401"}"#, deep, #"{"messages":"# + deep + "}",
        ]
        for body in bodies {
            #expect(Envelope.error(status: 500, body: Data(body.utf8)).code == FMError.ClientCode.malformedResponse, "\(body.prefix(80))")
            #expect(ODataEnvelope.error(status: 500, body: Data(body.utf8)).code == FMError.ClientCode.malformedResponse, "\(body.prefix(80))")
        }
        #expect(Self.code200(Data(#"{"messages":[{"code":"0"}],"response":[]}"#.utf8)) == FMError.ClientCode.malformedResponse)
    }

    /// Invalid UTF-8, escaped lone surrogates, NUL, ANSI escapes, C1 controls and a 4 MB message: a printable
    /// message of at most 600 characters (then `…`), never a trap.
    @Test("Hostile message texts come out printable and short")
    func hostileTexts() {
        let texts: [Data] = [
            Data(#"{"messages":[{"code":"500","message":"a\ud800b\udfffc"}]}"#.utf8),
            Data(#"{"messages":[{"code":"500","message":"a"#.utf8) + Data([0xFF, 0xC0, 0x80, 0xED, 0xA0, 0x80]) + Data(#""}]}"#.utf8),
            Data(#"{"messages":[{"code":"500","message":"a\u0000b\u001B[31mred\u0085\u009Bc"}]}"#.utf8),
            Data(#"{"messages":[{"code":"500","message":""#.utf8) + Data(repeating: UInt8(ascii: "\\"), count: 1) + Data("n".utf8)
                + Data(String(repeating: "\u{200B}é", count: 500_000).utf8) + Data(#""}]}"#.utf8),
        ]
        for body in texts {
            let error = Envelope.error(status: 500, body: body)
            #expect(error.code == "500" || error.code == FMError.ClientCode.malformedResponse)
            #expect(Self.isOneLine(error.message) && error.message.count <= 601, "\(error.message.prefix(100))")
        }
    }

    /// An XML error with a DTD and entities is read as text: nothing is expanded, its code is not FileMaker's.
    @Test("OData XML errors with entities expand nothing")
    func xmlEntities() {
        var dtd = #"<?xml version="1.0"?><!DOCTYPE m [<!ENTITY l0 "lol">"#
        for level in 1...9 { dtd += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">" }
        dtd += "]>"
        let laughs = Data((dtd + "<m:error><m:code>&l9;</m:code><m:message>&l9;</m:message></m:error>").utf8)
        #expect(ODataEnvelope.error(status: 500, body: laughs).code == FMError.ClientCode.notJSON)
        let inMessage = Data((dtd + "<m:error><m:code>500</m:code><m:message>&l9;&#10;x</m:message></m:error>").utf8)
        let error = ODataEnvelope.error(status: 500, body: inMessage)
        #expect(error.code == "500" && error.message == "&l9;&#10;x")
    }

    /// Through a whole call: a FileMaker error whose message carries line breaks, escapes, bidi controls, the
    /// password and the session token leaves every log line one line and free of both secrets.
    @Test("Every log line of a hostile error stays one line without secrets")
    func logLines() {
        let message = "bad\r\n[SwiftFM] ok s3cret-pass \(Bodies.token)\u{202E}\u{2028}\u{1B}[2J"
        let harness = Harness { request in
            isLogin(request) ? .json(200, Bodies.login()) : .json(500, String(decoding: Self.dataAPI(code: #""101""#, message: message), as: UTF8.self))
        }
        let recorder = Recorder<String>(expecting: 2)
        harness.api.getRecord(layout: "Contacts", recordId: 1) { _, code in recorder.record(code) }
        harness.api.getRecord(layout: "Contacts", recordId: 2) { _, code in recorder.record(code) }
        #expect(recorder.wait() == ["101", "101"])
        harness.drain()
        #expect(!harness.logs.values.isEmpty)
        for event in harness.logs.values {
            for line in [event.message] + Array(event.metadata.keys) + Array(event.metadata.values) {
                #expect(Self.isOneLine(line) && !line.contains("s3cret-pass") && !line.contains(Bodies.token) && !line.contains("[SwiftFM] ok"),
                        "\(line)")
            }
        }
    }
}
