import StreamAudio
@testable import StreamShared

/// streamplay's Ogg decode path: `OggConverter` (pages, resync, the packet assembler, link
/// changes, the granule placement and trims) with libopus or libvorbis behind it, fed the input
/// in pieces (first byte: piece size), then restarted at a page in the middle as a seek does
/// (the header pages given as the plan gives them, the target from the second byte); samples
/// bounded per input byte and always whole frames.
enum OggDecodeTarget {
    /// Samples one input byte can decode to: an Opus packet of 1 byte is 120 ms of 8 channels
    /// (46,080 samples); a Vorbis packet of a few bytes is a long block.
    static let samplesPerByte = 50_000
    static let slack = 1 << 22

    static func run(_ bytes: [UInt8]) {
        guard bytes.count > 2 else { return }
        let piece = 1 + Int(bytes[0]) * 64
        let input = Array(bytes.dropFirst(2))
        let bound = input.count * samplesPerByte + slack
        var converter = OggConverter(links: [OggConverter.Link(serial: 0, headers: input, firstSample: 0)])
        var total = 0
        func drain(_ converter: inout OggConverter, isComplete: Bool) -> Bool {
            var units = 0
            while true {
                let converted: Bool
                // The format of the link open before this unit (a unit may open the next link, whose
                // format the converter requires to be the same).
                let channels = max(1, converter.format?.channels ?? 1)
                do {
                    converted = try converter.convertNext(isComplete: isComplete) { samples in
                        require(samples.count % channels == 0, "\(samples.count) samples of \(channels) channels")
                        total += samples.count
                    }
                } catch { return false }
                require(total <= bound, "\(total) samples from \(input.count) bytes")
                if !converted { return true }
                units += 1
                require(units <= bound, "\(units) units from \(input.count) bytes")
            }
        }
        do { try converter.restart(at: 0) } catch { return }
        var offset = 0
        while offset < input.count {
            converter.append(Array(input[offset..<min(input.count, offset + piece)]))
            offset += piece
            guard drain(&converter, isComplete: false) else { return }
        }
        guard drain(&converter, isComplete: true) else { return }
        // A seek: restart at a capture pattern in the second half, aligned to a sample.
        let half = input.count / 2
        guard let page = OggPage.next(in: input[...], from: half)?.offset else { return }
        do { try converter.restart(at: page, sample: 1 + Int(bytes[1]) * 997) } catch { return }
        converter.append(Array(input[page...]))
        _ = drain(&converter, isComplete: true)
    }
}
