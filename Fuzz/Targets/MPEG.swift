@testable import StreamShared

/// The MPEG audio sync/header walk, with the Xing/Info/VBRI/LAME header of each frame.
enum MPEGTarget {
    static func run(_ bytes: [UInt8]) {
        _ = try? MPEGFrameHeader.parse(bytes[...])
        for isComplete in [true, false] {
            var scanner = MPEGFrameScanner(maxJunk: 64 * 1024)
            guard let first = try? scanner.findFirstFrame(in: bytes[...], confirmations: 1, isComplete: isComplete),
                  first.offset + first.length <= bytes.count else { continue }
            let frame = bytes[first.offset..<(first.offset + first.length)]
            _ = try? VBRHeader.parse(frame: frame, header: first.header)
            // Walk the rest of the stream; each step consumes at least one frame, so this ends.
            var position = first.offset + first.length
            var steps = 0
            while steps < 100_000, case .frame(let next, _)? = try? scanner.next(in: bytes[position...], isComplete: isComplete) {
                require(next.length > 0 && position + next.offset + next.length <= bytes.count,
                        "frame of \(next.length) bytes at \(position + next.offset) in \(bytes.count)")
                let start = position + next.offset
                _ = try? VBRHeader.parse(frame: bytes[start..<(start + next.length)], header: next.header)
                position = start + next.length
                steps += 1
            }
        }
    }
}
