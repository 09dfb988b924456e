import Foundation

/// Reads one part of an array split by ``JSONLexer/split(_:open:parts:)``: what ``ParallelParts`` runs on each
/// thread. A value that holds no mutable state: every part gets its own parser, tape or decoder.
protocol PartReading: Sendable {
    /// What one part gives (its elements, or a failure).
    associatedtype Part
    /// Reads the part that starts at `start`; `bytes` ends at the part's end (its comma, or the array's `]`
    /// for the `last` part).
    func read(_ bytes: UnsafeRawBufferPointer, start: Int, last: Bool) -> Part
}

/// The parallel parts of a large array, written once for the raw records (``JSONReader``) and the typed ones
/// (``FileMakerDecoder``): each part of the split is read on its own thread (`concurrentPerform`), and the
/// parts' results come back in order. Used only when a call's ``FMConfiguration/parallelDecoding`` is on.
enum ParallelParts {
    /// Each part of `split` over `bytes` read by `reader`, in order; `nil` if a part gave nothing (it cannot:
    /// `concurrentPerform` runs every iteration before it returns).
    static func read<Reader: PartReading>(_ bytes: UnsafeRawBufferPointer, _ split: JSONLexer.Split,
                                          with reader: Reader) -> [Reader.Part]? {
        let bounds = [split.start] + split.commas.map { $0 + 1 }
        let ends = split.commas + [split.close]
        let results = Results<Reader.Part>(count: bounds.count)
        let shared = SharedBytes(bytes: bytes)
        DispatchQueue.concurrentPerform(iterations: bounds.count) { part in
            let result = reader.read(UnsafeRawBufferPointer(rebasing: shared.bytes[..<ends[part]]), start: bounds[part],
                                     last: part == bounds.count - 1)
            results.set(part, result)
        }
        return results.all()
    }

    /// The document's bytes, read (never written) by the parts' threads while `concurrentPerform` runs, inside
    /// the `withUnsafeBytes` of the caller that keeps them alive.
    private struct SharedBytes: @unchecked Sendable {
        let bytes: UnsafeRawBufferPointer
    }

    /// The parts' results, each written once by one thread under the lock and read after `concurrentPerform`
    /// returned (`@unchecked`: a part's value, made on one thread, is handed over once, under the lock; it
    /// need not be `Sendable`, as the caller's records are not).
    private final class Results<Part>: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Part?]

        init(count: Int) {
            results = Array(repeating: nil, count: count)
        }

        func set(_ part: Int, _ result: Part) {
            lock.withLock { results[part] = result }
        }

        func all() -> [Part]? {
            lock.withLock {
                var all: [Part] = []
                all.reserveCapacity(results.count)
                for result in results {
                    guard let result else { return nil }
                    all.append(result)
                }
                return all
            }
        }
    }
}
