import Foundation

/// The FileMaker Data API emulator (placeholder).
public final class Emulator: Sendable {
    /// Creates an emulator.
    public init() {}
}
