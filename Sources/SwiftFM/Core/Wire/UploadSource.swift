import Foundation

/// A caller's file to upload, opened only when it is a regular file (a symlink to one is fine).
///
/// Anything else is refused with `-1009` naming the path, before a byte is read: a FIFO would block the opening
/// thread until a writer comes (and never end), a device such as `/dev/zero` never ends (and `/dev/null` would
/// go out as an empty file), a directory cannot be read.
enum UploadSource {
    /// `url` opened for reading, with its size when opened; or why it cannot be uploaded.
    static func opened(_ url: URL) -> Result<(handle: FileHandle, size: Int64), FMError> {
        if let error = notAFileURL(url, "upload source") { return .failure(error) }
        let path = url.path
        switch openRegular(path) {
        case .success(let file):
            return .success((FileHandle(fileDescriptor: file.descriptor, closeOnDealloc: true), Int64(file.info.st_size)))
        case .failure(.cannotOpen(let reason)), .failure(.cannotStat(let reason)):
            return .failure(cannotRead(path, reason))
        case .failure(.notRegular(let mode)):
            return .failure(FMError(code: FMError.ClientCode.fileError,
                                    message: "Cannot upload \(path): it is \(kind(mode)), not a regular file"))
        }
    }

    /// Why ``openRegular(_:)`` could not open a file; each caller reports it in its own words (``opened(_:)``: `-1009`
    /// naming the path; the curl transport: the `URLError`s of a body file).
    enum OpenFailure: Error {
        /// `open` failed (`strerror`'s words).
        case cannotOpen(String)
        /// `fstat` failed (`strerror`'s words).
        case cannotStat(String)
        /// Not a regular file: its `st_mode`.
        case notRegular(mode_t)
    }

    /// The steps every upload from a file opens it with (``opened(_:)``, the curl transport's body file): non-blocking, so
    /// that opening a FIFO does not wait for a writer (for ever); close-on-exec; a regular file only (a symlink to one is
    /// fine; a device never ends, and says size 0); then blocking again (reads of a regular file never wait; the flag is
    /// cleared all the same). The open descriptor (the caller's to close) and what `fstat` said of it, or why not, with
    /// nothing left open.
    static func openRegular(_ path: String) -> Result<(descriptor: Int32, info: stat), OpenFailure> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.cannotOpen(String(cString: strerror(errno)))) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            return .failure(.cannotStat(reason))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return .failure(.notRegular(info.st_mode))
        }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        return .success((fd, info))
    }

    /// Copies the content of `source` (a regular file: ``opened(_:)``), between `head` and `tail`, into a new private
    /// temporary file, in 1 MiB chunks (never whole in memory), and returns it; the caller removes it. The copy is the file
    /// as it was when it was opened, or an error: the bytes copied are those of its size then (a file that grows is not
    /// followed for ever), one that shrinks meanwhile fails, and one that grew or was written to by the end of the copy
    /// fails with `-1009` naming it (``FileSnapshot``) — the rule of every upload streamed from a file. The Data API's
    /// multipart body is such a copy, and so is an OData upload's body for a transport that reads the caller's file on
    /// its own schedule, unchecked.
    ///
    /// `stop` is asked before each chunk: once it says `true` (the call was cancelled or ran out of time), the copy ends
    /// there, the temporary file is removed and ``Stopped`` is thrown. `copied` is told the temporary file and the
    /// source's bytes copied so far, after each chunk.
    static func copy(_ source: URL, head: Data = Data(), tail: Data = Data(), stop: () -> Bool = { false },
                     copied: ((URL, Int64) -> Void)? = nil) throws -> URL {
        let (input, size) = try opened(source).get()
        defer { try? input.close() }
        let opened = FileSnapshot.of(input.fileDescriptor)
        let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("SwiftFM-upload-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw FMError.fileError("Cannot create a temporary file for the upload")
        }
        do {
            let output = try FileHandle(forWritingTo: temporary)
            defer { try? output.close() }
            try output.write(contentsOf: head)
            var left = size
            while left > 0 {
                if stop() { throw Stopped() }
                guard let chunk = try input.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty else {
                    throw FMError.fileError("\(source.path) became shorter while it was read (\(size - left) of \(size) bytes)")
                }
                try output.write(contentsOf: chunk)
                left -= Int64(chunk.count)
                copied?(temporary, size - left)
            }
            // The copy is the file as it was when opened, or the call fails: one that grew or was written to meanwhile
            // would go out cut short or mixing two versions.
            if let opened, let now = FileSnapshot.of(input.fileDescriptor), let change = opened.change(to: now, path: source.path) {
                throw FMError.fileError(change)
            }
            try output.write(contentsOf: tail)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        return temporary
    }

    /// ``copy(_:head:tail:stop:copied:)`` was told to stop: its call ended (and said so) while the body was being assembled.
    struct Stopped: Error {}

    /// Why `url` cannot be uploaded, or `nil` when it can (it is opened and closed again).
    static func problem(_ url: URL) -> FMError? {
        switch opened(url) {
        case .success(let file):
            try? file.handle.close()
            return nil
        case .failure(let error):
            return error
        }
    }

    private static func cannotRead(_ path: String, _ reason: String) -> FMError {
        FMError(code: FMError.ClientCode.fileError, message: "Cannot read \(path): \(reason)")
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a file"
        }
    }

    /// `-1002` when `url` is not a file URL (`https://…`): its path is never taken for a local one.
    static func notAFileURL(_ url: URL, _ what: String) -> FMError? {
        url.isFileURL ? nil : .invalidArgument("The \(what) must be a file URL (got a \(url.scheme ?? "relative") URL)")
    }
}

/// A transport that sends a body file as it was when it opened it, or fails the exchange with `-1009` naming the file
/// (it compares the file with its ``FileSnapshot`` as it sends it): the engine hands it the caller's file for an OData
/// container upload. Any other transport (``FMURLSessionTransport``, which reads the file by its path on its own schedule
/// and can be told of no change, or yours) is handed a private copy taken under the same rule
/// (``UploadSource/copy(_:head:tail:stop:copied:)``).
protocol SendsBodyFileAsItWas {
    /// `true` when this transport checks a body file as it sends it.
    var sendsBodyFileAsItWas: Bool { get }
}

/// An upload's file as it was when it was opened (its size and modification time), to tell whether it changed while
/// it was sent: the one rule of every upload streamed from a file (the copy that the Data API's multipart body, and an
/// OData upload's body over a transport other than FMCurlTransport, are made of; the curl transport's body file). A file
/// that grew, shrank or was written to would go out cut short or mixing two versions.
struct FileSnapshot: Equatable, Sendable {
    let size: Int64
    private let seconds: Int
    private let nanoseconds: Int

    /// The snapshot `fstat` gave.
    init(_ info: stat) {
        size = Int64(info.st_size)
        #if canImport(Darwin)
        (seconds, nanoseconds) = (Int(info.st_mtimespec.tv_sec), Int(info.st_mtimespec.tv_nsec))
        #else
        (seconds, nanoseconds) = (Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec))
        #endif
    }

    /// Open file `descriptor` as it is now; `nil` when `fstat` fails.
    static func of(_ descriptor: Int32) -> FileSnapshot? {
        var info = stat()
        return fstat(descriptor, &info) == 0 ? FileSnapshot(info) : nil
    }

    /// How `path`, taken as `self` when its upload started, differs now that it is `now`: the message of its `-1009`,
    /// or `nil` when it is unchanged.
    func change(to now: FileSnapshot, path: String) -> String? {
        let what: String
        if now.size != size {
            what = "\(size) bytes when the upload started, \(now.size) now"
        } else if now != self {
            what = "it was written to meanwhile"
        } else {
            return nil
        }
        return "\(path) changed while it was uploaded (\(what)): the upload was stopped; upload it again once it is complete"
    }
}
