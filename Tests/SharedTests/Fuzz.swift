import StreamShared

enum Fuzz {
    /// Calls `body` with every prefix of `bytes` (lengths 0..<count).
    static func forEachTruncation(of bytes: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) {
        for n in 0..<bytes.count { body(bytes[0..<n]) }
    }

    /// Calls `body` `count` times with a seeded mutation of `bytes`: bit flips, byte
    /// overwrites with boundary values, inserted/removed runs, and truncation.
    static func forEachMutation(of bytes: [UInt8], count: Int, seed: UInt64 = 0x5EED,
                                _ body: ([UInt8]) -> Void) {
        var rng = SplitMix64(seed: seed)
        let interesting: [UInt8] = [0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE]
        for _ in 0..<count {
            var m = bytes
            let edits = Int.random(in: 1...8, using: &rng)
            for _ in 0..<edits where !m.isEmpty {
                let i = Int.random(in: 0..<m.count, using: &rng)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0: m[i] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &rng)
                case 1: m[i] = interesting[Int.random(in: 0..<interesting.count, using: &rng)]
                case 2: m[i] = UInt8.random(in: 0...255, using: &rng)
                case 3: // remove a run
                    let n = min(Int.random(in: 1...16, using: &rng), m.count - i)
                    m.removeSubrange(i..<(i + n))
                case 4: // insert a run of random bytes
                    let n = Int.random(in: 1...16, using: &rng)
                    m.insert(contentsOf: (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: i)
                default: // truncate
                    m.removeSubrange(i..<m.count)
                }
            }
            body(m)
        }
    }
}
