/// SplitMix64: a small seeded generator, the same sequence on every platform, so a failure of a fuzz, oracle
/// or corruption test is reproducible from its seed. Shared by every test target.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state: the seed, then advanced by every ``next()``.
    public var state: UInt64

    /// A generator starting at `state`.
    public init(state: UInt64) { self.state = state }

    /// A generator starting at `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (`bound` > 0; the slight modulo bias does not matter to a test).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// `true` with a chance of `percent` in 100.
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}
