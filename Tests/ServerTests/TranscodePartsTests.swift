import Foundation
import Testing
@testable import StreamRadio
import StreamShared
import TestSupport

/// The transcoder's own parts without a server: silence that fills an estimate exactly, the
/// cache's LRU by bytes, the ID3v2 tag, the Opus encoder's stream as opusdec reads it.
struct TranscodePartsTests {
    @Test func silence_fillsEveryCountFromItsFloor_withWholeFrames() throws {
        for (rate, channels) in [(44_100, 2), (48_000, 1), (32_000, 2), (22_050, 2), (8_000, 1)] {
            // Counts just above the floor (where the mixes are tight), then larger ones.
            for count in Array(stride(from: MP3Silence.fillableFrom, to: MP3Silence.fillableFrom + 1_500, by: 499))
                + [10_000, 65_537, 1_000_003] {
                let bytes = try #require(MP3Silence.fill(count, sampleRate: rate, channels: channels), "\(rate) Hz: \(count) bytes")
                #expect(bytes.count == count)
                // Frame after frame, each header's length leading to the next header.
                var splitter = AudioFrameSplitter(codec: .mpeg)
                var at = 0, frames = 0
                while at < bytes.count {
                    guard case .frame(let frame) = try splitter.next(in: bytes[at...], isComplete: true) else {
                        Issue.record("\(rate) Hz \(count): no frame at \(at)")
                        break
                    }
                    #expect(frame.sampleRate == rate)
                    at += frame.length
                    frames += 1
                }
                #expect(at == count)
                // The fewest frames: the largest ones first (1,044+ bytes at 44.1 kHz).
                if count == 1_000_003 && rate == 44_100 { #expect(frames < 1_000_003 / 1_000) }
            }
        }
    }

    @Test func cache_dropsTheLeastRecentlyServed_whenOverItsBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tc-cache-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cache = try TranscodeCache(directory: dir, capacity: 2_500)
        for name in ["a", "b", "c"] {
            try Data(repeating: 1, count: 1_000).write(to: URL(fileURLWithPath: cache.path(of: name)))
            cache.added(name, size: 1_000)
            if name == "b" { #expect(cache.open("a") != nil) }   // a served again: b is now the oldest
        }
        #expect(cache.total == 2_000)
        #expect(cache.open("b") == nil && !FileManager.default.fileExists(atPath: cache.path(of: "b")))
        #expect(cache.open("a") != nil && cache.open("c") != nil)
        // A new cache over the same folder takes the files over and removes partial spools.
        try Data([1]).write(to: URL(fileURLWithPath: dir + "/.partial-1-1"))
        let again = try TranscodeCache(directory: dir, capacity: 2_500)
        #expect(again.total == 2_000 && !FileManager.default.fileExists(atPath: dir + "/.partial-1-1"))
        #expect(TranscodeCache.name(key: "x|1", ext: "mp3") != TranscodeCache.name(key: "x|2", ext: "mp3"))
    }

    @Test func id3v2Tag_carriesTitleArtistAlbum_inUTF8() throws {
        let tag = ID3v2Writer.tag([("TITLE", "Ünïcode"), ("ARTIST", "A"), ("ALBUM", "")])
        #expect(Array(tag.prefix(5)) == Array("ID3".utf8) + [4, 0])
        let size = tag[6..<10].reduce(0) { $0 << 7 | Int($1) }
        #expect(size == tag.count - 10)
        #expect(tag.count == 10 + (10 + 1 + "Ünïcode".utf8.count) + (10 + 1 + 1))
        #expect(ID3v2Writer.tag([("TITLE", "")]).isEmpty)
    }

    @Test func opusEncoder_writesHeadersAtOnce_andTrimsTheEnd() throws {
        let encoder = try OggOpusEncoder(channels: 1, kbps: 64, tags: [("TITLE", "t")])
        var out: [UInt8] = []
        try encoder.encode([Float]()[...], appendingTo: &out)
        #expect(Array(out.prefix(4)) == Array("OggS".utf8), "the header pages before any audio")
        let tone = (0..<4_801).map { Float(sin(Double($0) * 0.05)) * 0.5 }
        try encoder.encode(tone[...], appendingTo: &out)
        try encoder.finish(appendingTo: &out)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tc-\(UUID().uuidString.prefix(8)).opus")
        try Data(out).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        // The last granule: pre-skip + exactly the 4,801 samples given.
        var last = 0
        var at = 0
        while at + 27 <= out.count, out[at..<(at + 4)] == ArraySlice("OggS".utf8) {
            let granule = (0..<8).reduce(0) { $0 | Int(out[at + 6 + $1]) << (8 * $1) }
            let segments = Int(out[at + 26])
            let body = out[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            if granule >= 0 && granule != -1 { last = granule }
            at += 27 + segments + body
        }
        let preSkip = Int(out[28 + 10]) | Int(out[28 + 11]) << 8
        #expect(last - preSkip == 4_801, "granule \(last), pre-skip \(preSkip)")
    }
}

/// `OggOpusTail`: an Opus estimate's padding inside the last pages' packets.
struct OggOpusPaddingTests {
    /// A hard-CBR encode of 10 s, its pages held back (40 of 52) and padded by 300,000 bytes:
    /// exactly that much longer, every page's CRC right (opusdec and ffmpeg read it without a
    /// complaint), no packet past 61,440 bytes, and opusdec's samples the very ones of the same
    /// encode unpadded.
    @Test func padding_growsTheStreamExactly_andDecodesToTheSameSamples() throws {
        func encode(padding: Int) throws -> (bytes: [UInt8], added: Int) {
            let encoder = try OggOpusEncoder(channels: 2, kbps: 64, tags: [("TITLE", "padding")], constantBitrate: true)
            var tail = OggOpusTail(holdPages: 40)
            var out: [UInt8] = [], bytes: [UInt8] = []
            var samples: [Float] = []
            for second in 0..<10 {
                samples.removeAll(keepingCapacity: true)
                for n in 0..<48_000 {
                    let t = Double(second * 48_000 + n) / 48_000
                    samples.append(Float(0.3 * sin(2 * Double.pi * 440 * t) + 0.1 * sin(2 * Double.pi * 3_000 * t * t)))
                    samples.append(Float(0.3 * sin(2 * Double.pi * 660 * t)))
                }
                try encoder.encode(samples[...], appendingTo: &bytes)
                try tail.take(&bytes, release: &out)
            }
            try encoder.finish(appendingTo: &bytes)
            try tail.take(&bytes, release: &out)
            let added = try tail.finish(padding: padding, release: &out)
            return (out, added)
        }
        let plain = try encode(padding: 0), padded = try encode(padding: 300_000)
        #expect(plain.added == 0 && padded.added == 300_000)
        #expect(padded.bytes.count == plain.bytes.count + 300_000, "\(padded.bytes.count) bytes, unpadded \(plain.bytes.count)")
        // Page by page: CRCs, and the packets' sizes.
        var at = 0, largest = 0
        while at < padded.bytes.count {
            let length = try #require(try OggOpusTail.pageLength(padded.bytes[at...]))
            var page = Array(padded.bytes[at..<(at + length)])
            let crc = page[22..<26].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
            for i in 22..<26 { page[i] = 0 }
            #expect(OggCRC.crc32(page[...]) == crc, "the page at \(at)")
            var size = 0
            for k in 0..<Int(page[26]) {
                size += Int(page[27 + k])
                if page[27 + k] < 255 { largest = max(largest, size); size = 0 }
            }
            at += length
        }
        #expect(largest <= 61_440 && largest > 20_000, "largest packet \(largest) bytes")
        func opusdec(_ bytes: [UInt8]) throws -> Data {
            let dir = FileManager.default.temporaryDirectory
            let input = dir.appendingPathComponent("pad-\(UUID().uuidString.prefix(8)).opus")
            let output = input.deletingPathExtension().appendingPathExtension("raw")
            defer { try? FileManager.default.removeItem(at: input); try? FileManager.default.removeItem(at: output) }
            try Data(bytes).write(to: input)
            let run = try runCommand(try #require(which("opusdec")), ["--quiet", "--float", "--rate", "48000", input.path, output.path])
            #expect(run.status == 0 && run.stderr.isEmpty, "opusdec: \(String(decoding: run.stderr, as: UTF8.self))")
            return try Data(contentsOf: output)
        }
        let plainPCM = try opusdec(plain.bytes), paddedPCM = try opusdec(padded.bytes)
        #expect(paddedPCM.count == 480_000 * 8 + 44 || paddedPCM.count == 480_000 * 8, "\(paddedPCM.count) bytes decoded")
        #expect(paddedPCM == plainPCM, "the padded stream decodes to other samples")
    }

    /// Every packet code grows by exactly the bytes asked (1 to 600), its TOC's frames kept.
    @Test func packets_ofEveryCode_growByExactlyTheExtra() {
        let packets: [[UInt8]] = [[0xFC] + [UInt8](repeating: 7, count: 100),           // code 0
                                  [0xFD] + [UInt8](repeating: 7, count: 100),           // code 1
                                  [0xFE, 40] + [UInt8](repeating: 7, count: 100),       // code 2
                                  [0xFF, 0x03] + [UInt8](repeating: 7, count: 99),      // code 3, CBR, 3 frames
                                  [0xFF, 0x41, 3] + [UInt8](repeating: 7, count: 50) + [0, 0, 0]]  // code 3, padded
        for packet in packets {
            for extra in [1, 2, 3, 254, 255, 256, 257, 509, 510, 600] {
                guard let grown = OggOpusTail.paddedPacket(packet, by: extra) else {
                    Issue.record("no padding for \(packet.prefix(2)) + \(extra)")
                    continue
                }
                #expect(grown.count == packet.count + extra, "\(packet.prefix(2)) + \(extra): \(grown.count)")
                #expect(grown[0] == packet[0] | 0x03)
            }
        }
    }
}
