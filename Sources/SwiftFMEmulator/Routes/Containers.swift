import Foundation

extension EmulatorState {
    /// E16: `POST …/records/{recordId}/containers/{field}/{repetition}` (multipart, part `upload`).
    mutating func uploadContainer(_ layout: EmulatorSchema.Layout, id: Int, field fieldName: String, repetition: String?,
                                  _ ctx: inout RequestContext) throws -> Reply {
        let (field, currentModId) = try containerTarget(layout, id: id, field: fieldName)
        let rep = try repetition.map { text -> Int in
            guard let n = Int(text) else { throw FMError("111") }
            return n
        } ?? 1
        guard rep >= 1, rep <= field.repetitions else { throw FMError("111") }
        let parsed = prepared.map(\.parts)
            ?? (try? MultipartFormData.parse(body: ctx.request.body, contentType: ctx.request.header("Content-Type") ?? "", sharing: true))
        guard let parts = parsed else {
            throw FMError("960", "Upload payload must contain a part named 'upload'.")
        }
        guard let upload = parts.first(where: { $0.name == "upload" }) else {
            throw FMError("960", "Upload payload must contain a part named 'upload'.")
        }
        let modIdText = ctx.queryValue("modId") ?? parts.first { $0.name == "modId" }.map { String(decoding: $0.data, as: UTF8.self) }
        if let m = modIdText?.trimmingCharacters(in: .whitespacesAndNewlines), m != String(currentModId) { throw FMError("306") }
        let filename = upload.filename ?? "file"
        let type = upload.contentType.flatMap { $0.isEmpty || $0 == "application/octet-stream" ? nil : $0 }
            ?? mimeType(forExtension: EmulatorState.urlExtension(of: filename))
        let replaced = table(layout.table)?.records[id]?.value(field, repetition: rep)
        let value = storeBlob(upload.data, type: type, filename: filename)
        let modId: Int
        do {
            modId = try editRecord(table: layout.table, id: id, writes: [Write(field: field, repetition: rep, value: value)],
                                   session: ctx.token, now: ctx.now, bump: true)
        } catch {
            if case let .container(ref) = value { blobs[ref.key] = nil }
            throw error
        }
        if case let .container(old)? = replaced { forgetBlobIfUnused(old.key) }
        return Reply(response: .object([("modId", .string(String(modId)))]))
    }

    /// Keeps `data` as a container's bytes under a new random key; returns the value a record stores.
    mutating func storeBlob(_ data: Data, type: String, filename: String) -> FMValue {
        var rng = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in String(format: "%02X", UInt8.random(in: 0...255, using: &rng)) }.joined()
        blobs[key] = Blob(data: data, contentType: type, filename: filename)
        return .container(ContainerRef(key: key, filename: filename, contentType: type, fileExtension: EmulatorState.urlExtension(of: filename)))
    }

    /// The extension a container's URL carries: only a plain word (`png`), never text that would break the URL.
    static func urlExtension(of filename: String) -> String {
        let raw = filename.lastIndex(of: ".").map { String(filename[filename.index(after: $0)...]) } ?? ""
        return raw.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) ? raw : ""
    }

    /// Drops a replaced container's bytes once no record or session global holds them any more (a large
    /// container's spool file is freed then, not when the emulator stops).
    mutating func forgetBlobIfUnused(_ key: String) {
        guard blobs[key] != nil else { return }
        func holds(_ values: [FMValue]) -> Bool {
            values.contains { if case let .container(ref) = $0 { return ref.key == key }; return false }
        }
        for table in tables.values {
            for record in table.records.values where record.values.values.contains(where: holds) { return }
        }
        for session in sessions.values where session.globals.values.contains(where: holds) { return }
        blobs[key] = nil
    }

    /// The container field and the record's current modId (without keeping a copy of the table alive). The field must be
    /// on the layout, as for every write (WIRE.md §1.2, §10.1; SCHEMA.md): one of its table that the layout does not
    /// show is 102.
    func containerTarget(_ layout: EmulatorSchema.Layout, id: Int, field name: String) throws -> (EmulatorSchema.Field, Int) {
        guard let table = table(layout.table) else { throw FMError("106") }
        guard let record = table.records[id] else { throw FMError("101") }
        guard let field = table.field(name), field.type == .container,
              layoutFieldSet(layout).contains(field.name.lowercased()) else { throw FMError("102") }
        return (field, record.modId)
    }

    /// `GET /Streaming_SSL/MainDB/<KEY>.<ext>`: 302 with a session cookie first, then the bytes.
    mutating func streamContainer(_ request: HTTPRequest, name: String) -> HTTPResponse {
        let key = name.split(separator: ".").first.map(String.init) ?? name
        guard let blob = blobs[key] else {
            return HTTPResponse(status: 404, headers: [("Content-Type", "text/html")], body: Data("<html><body>Not Found</body></html>".utf8))
        }
        let cookies = (request.header("Cookie") ?? "").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        let hasCookie = cookies.contains { c in
            c.hasPrefix("X-FMS-Session-Key=") && streamingCookies.contains(String(c.dropFirst("X-FMS-Session-Key=".count)))
        }
        guard hasCookie else {
            var rng = SystemRandomNumberGenerator()
            let value = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &rng)) }.joined()
            streamingCookies.insert(value)
            // Absolute, under the scheme and host the client used (the public URL, a proxy's X-Forwarded-*, or Host).
            let hasHost = request.header("Host") != nil || request.header("X-Forwarded-Host") != nil || publicURL != nil
            let location = hasHost ? origin(of: request, fallbackHost: "127.0.0.1") + request.target : request.target
            return HTTPResponse(status: 302, headers: [("Location", location),
                                                       ("Set-Cookie", "X-FMS-Session-Key=\(value); Path=/; HttpOnly"),
                                                       ("Content-Type", "text/html")], body: Data())
        }
        let body = request.method == "HEAD" ? Data() : blob.data
        return HTTPResponse(status: 200, headers: [("Content-Type", blob.contentType),
                                                   ("Content-Disposition", "inline; filename=\"\(blob.filename)\"")], body: body)
    }
}
