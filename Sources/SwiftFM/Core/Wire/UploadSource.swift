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

/// An upload's file as it was when it was opened (its size and modification time), to tell whether it changed while
/// it was sent: the one rule of every upload streamed from a file (the Data API's multipart copy, the curl
/// transport's body file). A file that grew, shrank or was written to would go out cut short or mixing two versions.
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
