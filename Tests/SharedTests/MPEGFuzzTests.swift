import Testing
import TestSupport
@testable import StreamShared

/// Every truncation and 10,000 seeded mutations of MPEG streams end in a value or a thrown
/// error: no crash, no hang.
@Suite struct MPEGFuzzTests {
    /// A Xing/LAME frame, 6 CBR frames, 3 free-format-looking bytes of junk and 3 more frames.
    static let stream: [UInt8] = {
        let raw = MPEGBuilder.header()
        return MPEGBuilder.xingFrame(frames: 9, bytes: 9 * 417) + MPEGBuilder.frames(raw, count: 6)
            + [0xFF, 0xE2, 0x00] + MPEGBuilder.frames(MPEGBuilder.header(padding: true), count: 3)
    }()

    /// Walks all frames of `bytes` as TrackAnalyzer does; returns the frame count.
    static func walk(_ bytes: ArraySlice<UInt8>) throws -> Int {
        var scanner = MPEGFrameScanner(maxJunk: 4096)
        var position = bytes.startIndex
        var count = 0
        if let first = try scanner.findFirstFrame(in: bytes, isComplete: true) {
            let frame = bytes.dropFirst(first.offset).prefix(first.length)
            _ = try VBRHeader.parse(frame: frame, header: first.header)
            position = bytes.startIndex + first.offset
        } else {
            return 0
        }
        while position < bytes.endIndex, case .frame(let f, _) = try scanner.next(in: bytes[position...], isComplete: true) {
            count += 1
            position += f.offset + f.length
            if count > bytes.count { Issue.record("frame walk does not advance"); break }
        }
        return count
    }

    @Test func validStream_walksAllFrames() throws {
        #expect(try Self.walk(Self.stream[...]) == 10)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func everyTruncation_endsCleanly() {
        var values = 0, errors = 0
        Fuzz.forEachTruncation(of: Self.stream) { prefix in
            do { _ = try Self.walk(prefix); values += 1 } catch { errors += 1 }
        }
        #expect(values + errors == Self.stream.count)
        #expect(values > 0)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func seededMutations_endCleanly() {
        var values = 0, errors = 0
        Fuzz.forEachMutation(of: Self.stream, count: 10_000) { mutated in
            do { _ = try Self.walk(mutated[...]); values += 1 } catch { errors += 1 }
        }
        #expect(values + errors == 10_000)
        #expect(values > 0)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func vbriMutations_endCleanly() {
        let raw = MPEGBuilder.header()
        var f = MPEGBuilder.frame(raw, fill: 0)
        var tag: [UInt8] = Array("VBRI".utf8) + [0, 1, 0x02, 0x40, 0, 75]
        tag += MPEGBuilder.be32(100_000) + MPEGBuilder.be32(240) + [0, 3, 0, 1, 0, 2, 0, 80, 0x82, 0x35, 0x82, 0x35, 0x80, 0]
        for (i, b) in tag.enumerated() { f[36 + i] = b }
        var values = 0, errors = 0
        Fuzz.forEachMutation(of: f, count: 10_000, seed: 7) { mutated in
            guard mutated.count >= 4, let header = MPEGFrameHeader(raw: MPEGFrameHeader.readRaw(mutated[...], at: 0)) else {
                values += 1
                return
            }
            do { _ = try VBRHeader.parse(frame: mutated[...], header: header); values += 1 } catch { errors += 1 }
        }
        #expect(values + errors == 10_000)
        #expect(errors > 0, "some mutations must be rejected")
    }
}
