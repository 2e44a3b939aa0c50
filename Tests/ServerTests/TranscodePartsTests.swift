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
            cache.added(name)
            if name == "b" { #expect(cache.open("a") != nil) }   // a served again: b is now the oldest
        }
        #expect(cache.total == 2_000)
        #expect(cache.open("b") == nil && !FileManager.default.fileExists(atPath: cache.path(of: "b")))
        #expect(cache.open("a") != nil && cache.open("c") != nil)
        // A new cache over the same folder takes the files over and removes the partial spools of
        // a process that is gone (a pid above Linux's largest), not those of one that runs (another
        // server sharing the folder: here, this process).
        let dead = dir + "/.partial-4194305-1", live = dir + "/.partial-\(getpid())-1"
        try Data([1]).write(to: URL(fileURLWithPath: dead))
        try Data([1]).write(to: URL(fileURLWithPath: live))
        let again = try TranscodeCache(directory: dir, capacity: 2_500)
        #expect(again.total == 2_000 && !FileManager.default.fileExists(atPath: dead))
        #expect(FileManager.default.fileExists(atPath: live), "another server's encode under way was removed")
        unlink(live)
        #expect(TranscodeCache.name(key: "x|1", ext: "mp3") != TranscodeCache.name(key: "x|2", ext: "mp3"))
        // A hit renews the access time only: the file's ETag (inode, size, mtime) stays as clients hold it.
        let etag = try #require(again.open("a")).etag
        usleep(20_000)
        #expect(try #require(again.open("a")).etag == etag, "a hit changed the cached file's ETag")
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
    @Test func id3v2Tag_carriesTheCover_asAnAPICFrame() throws {
        let cover = EmbeddedPicture(mimeType: "image/png", data: Array(0..<200).map { UInt8($0) })
        let tag = ID3v2Writer.tag([("TITLE", "T")], cover: cover)
        let size = tag[6..<10].reduce(0) { $0 << 7 | Int($1) }
        #expect(size == tag.count - 10, "the tag's size counts the picture")
        #expect(try EmbeddedPictureReader.id3Picture(tag[...]) == cover, "the project's own reader finds the same picture")
    }

    /// Our Ogg Opus stream (libopus packets, our pages) as opusdec reads it: exactly the samples
    /// given, within an SNR bound of the source; pre-skip the encoder's lookahead; header pages
    /// as RFC 7845 §3 has them; granules counting decoded samples, the last one trimming the end;
    /// the tags and the cover in OpusTags.
    @Test func opusEncoder_streamDecodesToTheSource_withPreSkipAndEndTrim() throws {
        let opusdec = try #require(which("opusdec"), "opusdec (opus-tools)")
        let compare = try #require(TestPaths.pcmCompare, "pcm-compare from ../shared/tools")
        let cover = EmbeddedPicture(mimeType: "image/jpeg", data: (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let encoder = try OggOpusEncoder(channels: 2, kbps: 128, tags: [("TITLE", "Tïtle"), ("ARTIST", "")], cover: cover)
        // 1.5 s and 13 samples of chords with a little noise: not a whole number of 20 ms frames.
        let frames = 72_013
        var generator = SystemRandomNumberGenerator()
        var source = [Float](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let t = Double(i) / 48_000
            let chord = sin(2 * .pi * 220 * t) + 0.6 * sin(2 * .pi * 277.2 * t) + 0.4 * sin(2 * .pi * 329.6 * t)
            source[2 * i] = Float(0.25 * chord) + Float.random(in: -0.01...0.01, using: &generator)
            source[2 * i + 1] = Float(0.25 * sin(2 * .pi * 440 * t + 1) + 0.1 * sin(2 * .pi * 1_250 * t))
        }
        var out: [UInt8] = []
        var at = 0
        while at < source.count {   // in uneven pieces, as a decode worker hands them over
            let next = min(source.count, at + 2 * 1_777)
            try encoder.encode(source[at..<next], appendingTo: &out)
            at = next
        }
        try encoder.finish(appendingTo: &out)

        // The pages: CRCs hold, BOS first, EOS last, one stream.
        var pages: [(page: OggPage, body: ArraySlice<UInt8>)] = []
        var offset = 0
        while offset < out.count {
            let page = try #require(try OggPage.parse(out[offset...]), "a whole page at \(offset)")
            pages.append((page, out[(offset + page.headerLength)..<(offset + page.length)]))
            offset += page.length
        }
        #expect(pages.map(\.page.isBeginningOfStream) == [true] + Array(repeating: false, count: pages.count - 1))
        #expect(pages.map(\.page.isEndOfStream) == Array(repeating: false, count: pages.count - 1) + [true])
        #expect(Set(pages.map(\.page.serial)).count == 1 && pages.map(\.page.sequence) == (0..<UInt32(pages.count)).map { $0 })
        // Page 0: OpusHead alone, granule 0, pre-skip = the encoder's lookahead (312 for libopus's "audio").
        #expect(pages[0].page.lacing.count == 1 && pages[0].page.granulePosition == 0)
        let head = try OpusHead.parse(pages[0].body)
        #expect(head.preSkip == encoder.preSkip && head.preSkip == 312 && head.channels == 2 && head.mappingFamily == 0)
        // OpusTags across pages (the cover is larger than a page): granule −1 until the page that
        // ends it, which has granule 0 and nothing else.
        var assembler = OggPacketAssembler(serial: pages[0].page.serial)
        var packets: [OggPacket] = []
        var tagsEnd = 0
        for index in pages.indices {
            packets += try assembler.push(pages[index].page, body: pages[index].body)
            if tagsEnd == 0, packets.count >= 2 {
                tagsEnd = index
                #expect(packets.count == 2 && pages[index].page.granulePosition == 0, "the comment header ends its page, at granule 0")
            }
        }
        #expect(tagsEnd >= 2, "a 70 KB cover takes two pages")
        #expect(pages[1..<tagsEnd].allSatisfy { $0.page.granulePosition == -1 })
        let tags = try VorbisComment.parse(packets[1].data[8...])
        #expect(packets[1].data.starts(with: Array("OpusTags".utf8)))
        #expect(tags.value("TITLE") == "Tïtle" && tags.value("ARTIST") == nil && tags.vendor.hasPrefix("libopus"))
        #expect(tags.pictures.count == 1 && tags.pictures.first?.data == cover.data && tags.pictures.first?.pictureType == 3)
        // Audio granules: whole 20 ms frames counted from the stream's start, rising, and the last
        // one trimmed to pre-skip + exactly the frames given.
        let audio = pages[(tagsEnd + 1)...].map(\.page.granulePosition)
        #expect(zip(audio, audio.dropFirst()).allSatisfy { $0 < $1 })
        #expect(audio.dropLast().allSatisfy { $0 % 960 == 0 })
        #expect(audio.last == Int64(head.preSkip + frames), "end trim: \(audio.last ?? -1)")

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opusenc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(out).write(to: dir.appendingPathComponent("ours.opus"))
        try Data(Self.floatWAV(source, channels: 2, rate: 48_000)).write(to: dir.appendingPathComponent("source.wav"))
        let decoded = try runCommand(opusdec, ["--quiet", "--float", dir.appendingPathComponent("ours.opus").path,
                                               dir.appendingPathComponent("ours.wav").path])
        #expect(decoded.status == 0, "opusdec: \(String(decoding: decoded.stderr, as: UTF8.self))")
        // Exactly the source's frames, not shifted, and close to it (libopus at 128 kbit/s).
        let verdict = try runCommand(compare, [dir.appendingPathComponent("source.wav").path, dir.appendingPathComponent("ours.wav").path,
                                               "--min-snr", "\(Self.minimumSNR)", "--max-len-diff", "0", "--max-offset", "0"])
        let line = String(decoding: verdict.stdout, as: UTF8.self)
        #expect(verdict.status == 0, "pcm-compare: \(line)")
        #expect(line.contains("len_diff=0") && line.contains("offset=0"), "\(line)")
    }

    /// The SNR opusdec's decode of our 128 kbit/s stream keeps against its source, at least (the
    /// test signal measured 33.3 dB with libopus 1.3.1; the bound leaves room for other versions).
    static let minimumSNR = 20.0

    /// A 32-bit float WAV of interleaved `samples`.
    static func floatWAV(_ samples: [Float], channels: Int, rate: Int) -> [UInt8] {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let data = samples.flatMap { le(Int($0.bitPattern), 4) }
        return Array("RIFF".utf8) + le(36 + data.count, 4) + Array("WAVEfmt ".utf8) + le(16, 4) + le(3, 2) + le(channels, 2)
            + le(rate, 4) + le(rate * channels * 4, 4) + le(channels * 4, 2) + le(32, 2) + Array("data".utf8) + le(data.count, 4) + data
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
