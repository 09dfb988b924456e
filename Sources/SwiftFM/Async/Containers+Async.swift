import Foundation

extension DataAPI {
    /// Uploads a local file into a container field (MIME type given or inferred).
    /// - Throws: ``FMError`` (`-1009` for an unreadable file, or anything but a regular file).
    @discardableResult
    public func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1, fileURL: URL,
                                fileName: String? = nil, mimeType: String? = nil) async throws -> FMEditResult {
        try await bridge(Endpoints.uploadContainer(layout: layout, recordId: recordId, field: field, repetition: repetition,
                                                   fileURL: fileURL, fileName: fileName, mimeType: mimeType))
    }

    /// Uploads bytes into a container field (MIME type given or inferred).
    /// - Throws: ``FMError``.
    @discardableResult
    public func uploadContainer(layout: String, recordId: Int, field: String, repetition: Int = 1, data: Data,
                                fileName: String, mimeType: String? = nil) async throws -> FMEditResult {
        try await bridge(Endpoints.uploadContainer(layout: layout, recordId: recordId, field: field, repetition: repetition,
                                                   data: data, fileName: fileName, mimeType: mimeType))
    }

    /// Downloads a container's content, following the streaming redirect with its cookie.
    /// - Throws: ``FMError``; task cancellation cancels whichever hop is in flight.
    public func downloadContainer(url: URL) async throws -> Data {
        let handle = FMRequest()
        return try await bridge(attaching: handle) { completion in
            followContainer(url: url, cookie: nil, hopsLeft: Endpoints.maxContainerRedirects, request: handle) { result, _ in
                completion(result)
            }
        }
    }

    /// Downloads a container's content into a local file, streamed (bounded memory); see
    /// ``downloadContainer(url:to:progress:completion:)``.
    /// - Returns: `fileURL`.
    /// - Throws: ``FMError`` (`-1009` when the file cannot be written).
    @discardableResult
    public func downloadContainer(url: URL, to fileURL: URL, progress: (@Sendable (Int64, Int64) -> Void)? = nil) async throws -> URL {
        let handle = FMRequest()
        return try await bridge(attaching: handle) { completion in
            downloadContainerResult(url: url, to: fileURL, progress: progress, handle: handle, completion: completion)
        }
    }
}
