/// SplitMix64: a small, fast generator whose sequence depends only on its seed, so a seeded
/// shuffle (`streamplay --seed`, `/playlist/all.m3u8?shuffle=SEED`) or a seeded test mutation is
/// the same on every run and machine, whatever the standard library's generator does.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in 0..<bound (bound > 0), without modulo bias (Lemire's multiply-and-reject).
    public mutating func next(below bound: UInt64) -> UInt64 {
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold { product = next().multipliedFullWidth(by: bound) }
        }
        return product.high
    }

    /// A seed from the system's generator, for shuffles without a given seed.
    public static func entropy() -> UInt64 {
        var system = SystemRandomNumberGenerator()
        return system.next()
    }
}
