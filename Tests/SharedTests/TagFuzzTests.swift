import Testing
import TestSupport
@testable import StreamShared

/// How the runs of one fuzzed parser ended. A trap or a hang fails the whole test run instead.
struct TagFuzzOutcomes: CustomStringConvertible {
    var values = 0, errors = 0, truncations = 0
    var total: Int { values + errors }
    var description: String { "\(values) values, \(errors) errors (\(truncations) truncated)" }

    /// Runs `body`, counts how it ended, and hands a value to `check`.
    mutating func record<T>(_ body: () throws -> T, check: (T) -> Void = { _ in }) {
        do {
            let value = try body()
            values += 1
            check(value)
        } catch {
            errors += 1
            if let error = error as? FormatError, error.isTruncation { truncations += 1 }
        }
    }
}

@Suite struct TagFuzzRobustnessTests {
    typealias B = ID3v2Bytes
    typealias T = TrailingBytes
    static let mutations = 10_000

    /// An ID3v2.3 tag as LAME or a desktop tagger writes it: several text encodings, a comment,
    /// a user text frame, a cover, and padding.
    static var realisticV23: [UInt8] {
        let body = B.frame("TIT2", B.latin1("Chords and Melody"), version: 3)
            + B.frame("TPE1", B.utf16("Bände & Chœur", bigEndian: false) + [0, 0], version: 3)
            + B.frame("TALB", B.utf16("Generated Library", bigEndian: true), version: 3)
            + B.frame("TRCK", B.latin1("2/9"), version: 3)
            + B.frame("TSSE", B.latin1("LAME 64bits version 3.100"), version: 3)
            + B.frame("COMM", [0] + Array("eng".utf8) + [0] + Array("A comment".utf8), version: 3)
            + B.frame("TXXX", [0] + Array("REPLAYGAIN_TRACK_GAIN".utf8) + [0] + Array("-6.20 dB".utf8), version: 3)
            + B.frame("APIC", B.apic(description: Array("cover".utf8) + [0], picture: B.jpeg(400)), version: 3)
        return B.tag(version: 3, body: body, padding: 64)
    }

    /// An ID3v2.4 tag with tag-level unsynchronisation (every frame unsynchronised, with a data
    /// length indicator) and a footer; 2.4 allows no padding with a footer.
    static var unsyncV24WithFooter: [UInt8] {
        func unsynced(_ id: String, _ content: [UInt8]) -> [UInt8] {
            B.frame(id, synchsafe(content.count) + B.unsynchronise(content), version: 4, formatFlags: 0x03)
        }
        let body = unsynced("TIT2", B.latin1("ÿes ÿes"))
            + unsynced("TPE1", B.utf16("Ünsync", bigEndian: false))
            + unsynced("TALB", B.utf8("Album") + [0] + Array("Second value".utf8))
            + unsynced("TRCK", B.latin1("7"))
            + unsynced("APIC", B.apic(mime: "image/png", type: 3, description: [0], encoding: 3, picture: B.jpeg(300)))
        return B.tag(version: 4, flags: 0x80, body: body, footer: true)
    }

    /// The end of a file: some audio, an APEv2 tag with header, then ID3v1.1.
    static var apeAndID3v1Tail: [UInt8] {
        T.audio(64) + T.ape(header: true) + T.id3v1(title: "Mutated", artist: "Fuzz", album: "Tail", track: 3)
    }

    @Test func samplesParseBeforeMutation() throws {
        let v23 = try ID3v2.parse(Self.realisticV23[...])
        #expect(v23.tags == TrackTags(title: "Chords and Melody", artist: "Bände & Chœur",
                                      album: "Generated Library", track: "2/9", coverArtBytes: 400,
                                      replayGain: ReplayGain(trackGain: -6.2)))
        let v24 = try ID3v2.parse(Self.unsyncV24WithFooter[...])
        #expect(v24.hasFooter)
        #expect(v24.totalSize == Self.unsyncV24WithFooter.count)
        #expect(v24.tags == TrackTags(title: "ÿes ÿes", artist: "Ünsync", album: "Album", track: "7", coverArtBytes: 300))
        let tail = Self.apeAndID3v1Tail
        let trailing = try TrailingTags.scan(tail: tail[...], fileSize: tail.count)
        #expect(trailing.trailingBytes == tail.count - 64)
        #expect(trailing.id3v1?.track == "3")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func id3v23_truncationsAndMutations() {
        Self.fuzzID3v2(Self.realisticV23)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func id3v24UnsyncFooter_truncationsAndMutations() {
        Self.fuzzID3v2(Self.unsyncV24WithFooter)
    }

    /// Every cut of a tag throws `.truncated` (the whole tag is needed); every mutation ends in a
    /// value or an error, and a value never claims more bytes than were given.
    static func fuzzID3v2(_ sample: [UInt8]) {
        var cuts = TagFuzzOutcomes()
        Fuzz.forEachTruncation(of: sample) { prefix in
            cuts.record { try ID3v2.parse(prefix) }
        }
        #expect(cuts.total == sample.count)
        #expect(cuts.values == 0 && cuts.truncations == sample.count, "\(cuts)")

        var mutated = TagFuzzOutcomes()
        Fuzz.forEachMutation(of: sample, count: Self.mutations) { bytes in
            mutated.record({ try ID3v2.parse(bytes[...]) }) { tag in
                #expect(tag.totalSize <= bytes.count)
                #expect((try? ID3v2.totalSize(atStartOf: bytes[...])) == tag.totalSize)
            }
        }
        #expect(mutated.total == Self.mutations)
        #expect(mutated.values > 0 && mutated.errors > 0, "\(mutated)")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func id3v2TotalSize_neverThrowsOnMutations() {
        var outcomes = TagFuzzOutcomes()
        Fuzz.forEachMutation(of: Self.realisticV23, count: Self.mutations, seed: 0x1D3) { bytes in
            outcomes.record({ try ID3v2.totalSize(atStartOf: bytes[...]) }) { size in
                if let size { #expect(size == 0 || size >= 10) } else { #expect(bytes.count < 10) }
            }
        }
        #expect(outcomes.values == Self.mutations, "\(outcomes)")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func apeAndID3v1Tail_truncationsAndMutations() {
        let sample = Self.apeAndID3v1Tail
        // A file cut short (the cut end is the new end of file) ...
        var cuts = TagFuzzOutcomes()
        Fuzz.forEachTruncation(of: sample) { prefix in
            cuts.record({ try TrailingTags.scan(tail: prefix, fileSize: prefix.count) }) { Self.checkTrailing($0, fileSize: prefix.count) }
        }
        #expect(cuts.total == sample.count)
        // ... and a tail shorter than the tags, the way callers read only the last bytes.
        var tails = TagFuzzOutcomes()
        for start in 0..<sample.count {
            tails.record({ try TrailingTags.scan(tail: sample[start...], fileSize: sample.count) }) { result in
                Self.checkTrailing(result, fileSize: sample.count)
                // Whatever part of the APE tag is in view, its footer alone gives the full size;
                // a tail too short for a footer behind the ID3v1 sees the ID3v1 only, or nothing.
                let visible = sample.count - start
                let expected = visible >= 128 + 32 ? sample.count - 64 : (visible >= 128 ? 128 : 0)
                #expect(result.trailingBytes == expected, "tail of \(visible) bytes")
            }
        }
        #expect(tails.total == sample.count)
        #expect(tails.values > 0, "\(tails)")

        var mutated = TagFuzzOutcomes()
        Fuzz.forEachMutation(of: sample, count: Self.mutations) { bytes in
            mutated.record({ try TrailingTags.scan(tail: bytes[...], fileSize: bytes.count) }) {
                Self.checkTrailing($0, fileSize: bytes.count)
            }
        }
        #expect(mutated.total == Self.mutations)
        #expect(mutated.values > 0 && mutated.errors > 0, "\(mutated)")
    }

    /// What any result must satisfy: the tags fit in the file and the APE tag is part of them.
    static func checkTrailing(_ result: TrailingTags, fileSize: Int) {
        #expect(result.trailingBytes >= 0 && result.trailingBytes <= fileSize)
        #expect(result.apeSize >= 0 && result.apeSize <= result.trailingBytes)
    }
}
