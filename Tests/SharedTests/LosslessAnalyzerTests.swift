import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// FLAC, Ogg Opus, Ogg Vorbis, AIFF and ALAC files made here by the reference encoders (flac,
/// opusenc, oggenc, ffmpeg) from 2.5 s of 44.1 kHz stereo: the analyzer's format, length, depth,
/// tags, gains, covers and exact seek points, both the quick read (`describe`) and the full one.
@Suite(.timeLimit(.scaledMinutes(2))) struct LosslessAnalyzerTests {
    /// The generated files, made once for the suite.
    final class Files: Sendable {
        let folder: URL
        init() throws {
            folder = Self.folder(of: getpid())
            try LosslessMedia.make(in: folder)
            // A static is never deinitialised: the folder goes when the test process exits.
            atexit { try? FileManager.default.removeItem(at: Files.folder(of: getpid())) }
        }
        static func folder(of process: pid_t) -> URL {
            FileManager.default.temporaryDirectory.appendingPathComponent("lossless-analyzer-\(process)")
        }
        func bytes(_ name: String) throws -> MemoryBytes { MemoryBytes(Array(try Data(contentsOf: folder.appendingPathComponent(name)))) }
    }

    static let files = Result { try Files() }

    func bytes(_ name: String) throws -> MemoryBytes { try Self.files.get().bytes(name) }

    /// Samples of the source (2.5 s at 44.1 kHz), and their length in seconds.
    static let sourceFrames = 110_250
    static let seconds = 2.5

    @Test(arguments: [("tagged.flac", "flac", Container.flac, 16), ("tagged.opus", "opus", .ogg, 0),
                      ("tagged.ogg", "vorbis", .ogg, 0), ("tagged.aiff", "pcm_s24be", .aiff, 24),
                      ("tagged.m4a", "alac", .mp4, 16)])
    func formatLengthAndDepth_quickAndFull(name: String, codec: String, container: Container, bits: Int) throws {
        let source = try bytes(name)
        for analysis in [try TrackAnalyzer.describe(source), try TrackAnalyzer.analyze(source)] {
            #expect(analysis.container == container && analysis.codec == codec, "\(name): \(analysis.container) \(analysis.codec)")
            #expect(analysis.channels == 2, "\(name)")
            #expect(analysis.sampleRate == (codec == "opus" ? 48_000 : 44_100), "\(name): \(analysis.sampleRate)")
            #expect(analysis.bitsPerSample == (bits == 0 ? nil : bits), "\(name): \(analysis.bitsPerSample ?? -1)")
            #expect(abs(analysis.durationSeconds - Self.seconds) < 0.001, "\(name): \(analysis.durationSeconds) s")
            #expect(analysis.tags.title != nil, "\(name): \(analysis.tags)")
        }
        // The round trip through the analyzer worker's wire keeps the new fields.
        let full = try TrackAnalyzer.analyze(source)
        #expect(try TrackAnalysis(encoded: full.encoded()[...]) == full)
    }

    @Test func flacDuration_matchesMetaflac() throws {
        let folder = try Self.files.get().folder
        let result = try runCommand(try #require(which("metaflac")), ["--show-total-samples", folder.appendingPathComponent("tagged.flac").path])
        let samples = Int(String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        let analysis = try TrackAnalyzer.describe(try bytes("tagged.flac"))
        #expect(samples == analysis.totalSamples && samples == Self.sourceFrames)
    }

    @Test func opus_preSkipIsTheEncoderDelay_andLengthIsOpusdecs() throws {
        let analysis = try TrackAnalyzer.analyze(try bytes("tagged.opus"))
        #expect(analysis.encoderDelay == 312, "opusenc's pre-skip")
        #expect(analysis.totalSamples - analysis.encoderDelay == 120_000, "2.5 s at 48 kHz: \(analysis.totalSamples)")
    }

    @Test func gains_replayGainAsWritten_r128MovedBy5dB() throws {
        let flac = try TrackAnalyzer.describe(try bytes("tagged.flac")).tags.replayGain
        #expect(flac?.trackGain == -6.5 && flac?.trackPeak == 0.5)
        // R128_TRACK_GAIN=-512 is -2 dB against -23 LUFS: +3 dB against ReplayGain's reference.
        let opus = try TrackAnalyzer.describe(try bytes("tagged.opus")).tags.replayGain
        #expect(opus?.trackGain == 3 && opus?.albumGain == 4, "\(String(describing: opus))")
        let vorbis = try TrackAnalyzer.describe(try bytes("tagged.ogg")).tags.replayGain
        #expect(vorbis?.albumGain == -1.25)
    }

    @Test(arguments: ["tagged.flac", "tagged.opus", "tagged.m4a", "tagged.aiff"])
    func covers_fromEverySource(name: String) throws {
        let source = try bytes(name)
        let picture = try #require(try EmbeddedPictureReader.picture(in: source), "\(name)")
        #expect(picture.mimeType == "image/png" && picture.data.starts(with: [0x89, 0x50, 0x4E, 0x47]), "\(name)")
        #expect(try TrackAnalyzer.describe(source).tags.coverArtBytes == picture.data.count, "\(name)")
    }

    @Test(arguments: ["untagged.flac", "untagged.opus", "untagged.ogg", "untagged.aiff", "untagged.m4a"])
    func untagged_hasNoTagsAndNoCover(name: String) throws {
        let source = try bytes(name)
        let analysis = try TrackAnalyzer.describe(source)
        #expect(analysis.tags.title == nil && analysis.tags.replayGain == nil, "\(name): \(analysis.tags)")
        #expect(try EmbeddedPictureReader.picture(in: source) == nil, "\(name)")
    }

    /// Every point of the full index is a frame whose header's first sample is the point's sample.
    @Test func flacSeekPoints_areFrameStartsAtTheirSample() throws {
        let source = try bytes("blocks.flac")
        let analysis = try TrackAnalyzer.analyze(source)
        let points = analysis.seekIndex.points
        #expect(points.count >= 5, "one every 0.5 s at least: \(points.count)")
        #expect(points.first?.byte == analysis.firstFrameOffset && points.first?.sample == 0)
        let file = try source.read(at: 0, count: source.size)
        for point in points {
            let sample = try #require(point.sample)
            let header = try #require(try FLACFrameHeader.parse(file[point.byte..<min(file.count, point.byte + 16)]), "\(point)")
            #expect(FLACFrameScanner(file[...], isComplete: true).frame(at: point.byte) != nil, "CRC-16 confirmed: \(point)")
            #expect(header.firstSample(nominalBlockSize: 1152) == sample, "\(point)")
            #expect(abs(point.t - Double(sample) / 44_100) < 1e-9)
        }
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.sample! < $1.sample! && $0.byte < $1.byte })
        // The quick read keeps the first point only.
        #expect(try TrackAnalyzer.describe(source).seekIndex.points == [points[0]])
    }

    /// The quick read of a 40 s FLAC and Opus file (noise: megabytes) reads its headers and its
    /// end, not its audio.
    @Test func describe_readsHeadersAndTheEnd_only() throws {
        let folder = try Self.files.get().folder
        let noise = folder.appendingPathComponent("noise.wav").path
        defer {
            for name in ["noise.wav", "noise.flac", "noise.opus"] { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
        }
        try LosslessMedia.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "anoisesrc=d=40:r=44100:a=0.5", "-ac", "2", noise])
        try LosslessMedia.run("flac", ["-s", "-f", "-o", folder.appendingPathComponent("noise.flac").path, noise])
        try LosslessMedia.run("opusenc", ["--quiet", "--bitrate", "320", noise, folder.appendingPathComponent("noise.opus").path])
        for name in ["noise.flac", "noise.opus"] {
            let source = CountingBytes(try bytes(name))
            let quick = try TrackAnalyzer.describe(source)
            #expect(source.size > 1 << 20 && source.bytesRead < 512 << 10 && source.bytesRead * 4 < source.size,
                    "\(name): \(source.bytesRead) of \(source.size) bytes read")
            let full = try TrackAnalyzer.analyze(MemoryBytes(try bytes(name).bytes))
            #expect(abs(quick.durationSeconds - 40) < 0.001 && quick.durationSeconds == full.durationSeconds, "\(name)")
        }
    }

    /// Every point of an Ogg index is a page start, not continuing a packet, whose sample is the
    /// granule of the stream's page before it.
    @Test(arguments: ["tagged.opus", "tagged.ogg", "chained.opus"])
    func oggSeekPoints_arePageStartsAtThePreviousGranule(name: String) throws {
        let source = try bytes(name)
        let analysis = try TrackAnalyzer.analyze(source)
        let file = try source.read(at: 0, count: source.size)[...]
        var previousGranule: [UInt32: Int64] = [:]
        var granuleBefore: [Int: Int64] = [:]
        var offset = 0
        while let (at, page) = OggPage.next(in: file, from: offset) {
            if let granule = previousGranule[page.serial], !page.isBeginningOfStream { granuleBefore[at] = granule }
            if page.granulePosition != -1 { previousGranule[page.serial] = page.granulePosition }
            if page.isBeginningOfStream { previousGranule[page.serial] = nil }
            offset = at + page.length
        }
        let points = analysis.seekIndex.points
        // opusenc and oggenc write pages of about a second: one point each.
        #expect(points.count >= (name == "chained.opus" ? 4 : 2), "\(name): \(points.count) points")
        for point in points {
            let page = try #require(try OggPage.parse(file[point.byte...]), "\(name): \(point)")
            #expect(!page.isContinued, "\(name): \(point)")
            #expect(granuleBefore[point.byte].map(Int.init) == point.sample, "\(name): \(point)")
        }
        if name == "chained.opus" {
            #expect(Set(points.compactMap(\.link)) == [0, 1], "both links indexed")
            #expect(abs(analysis.durationSeconds - 2 * Self.seconds) < 0.001, "\(analysis.durationSeconds)")
        }
    }

    /// An Opus stream cut from a live one starts above granule 0: its length counts from the
    /// first page's granule less the samples of the packets ending on it (RFC 7845 §4.5).
    @Test func opusStartingAboveGranuleZero_countsFromItsStart() throws {
        // Three CELT 20 ms packets (TOC 0xFC: config 31, one frame of 960 samples), one a page.
        let start: Int64 = 48_000
        let file = FLACOggBuilders.oggStream(serial: 5, headers: [FLACOggBuilders.opusHead(preSkip: 312), FLACOggBuilders.opusTags([])],
                                             audio: [[0xFC, 1], [0xFC, 2], [0xFC, 3]],
                                             granules: [start + 960, start + 1920, start + 2880])
        for analysis in [try TrackAnalyzer.describe(MemoryBytes(file)), try TrackAnalyzer.analyze(MemoryBytes(file))] {
            #expect(analysis.durationSeconds == Double(2880 - 312) / 48_000, "\(analysis.durationSeconds)")
        }
    }

    /// COMM after the samples: read from the whole file, not the part before the samples.
    @Test func aiffWithCOMMAfterSSND_isRead() throws {
        let file = AIFFTests.form(AIFFTests.ssnd([UInt8](repeating: 1, count: 400)) + AIFFTests.comm(frames: 100))
        let analysis = try TrackAnalyzer.describe(MemoryBytes(file))
        #expect(analysis.totalSamples == 100 && analysis.bitsPerSample == 16 && analysis.codec == "pcm_s16be")
    }

    /// An SSND offset past the end of the file (found by the fuzzer) is a truncation, not a seek
    /// point outside the file.
    @Test func aiffWithSamplesPastTheFile_isTruncated() throws {
        let file = AIFFTests.form(AIFFTests.comm(frames: 10) + Array("SSND".utf8) + be32(0x2101C1) + be32(19_553) + be32(0))
        for read in [{ try TrackAnalyzer.describe(MemoryBytes(file)) }, { try TrackAnalyzer.analyze(MemoryBytes(file)) }] {
            let error = #expect(throws: FormatError.self) { _ = try read() }
            #expect(error?.isTruncation == true, "\(String(describing: error))")
        }
    }

    @Test func aiffTags_fromTheID3ChunkAfterTheSamples() throws {
        let analysis = try TrackAnalyzer.describe(try bytes("tagged.aiff"))
        #expect(analysis.tags.title == "Aiff Title" && analysis.tags.artist == "Aiff Artist", "\(analysis.tags)")
        #expect(analysis.seekIndex.firstFrameOffset == analysis.firstFrameOffset)
    }
}


/// A source that counts the bytes read from it.
final class CountingBytes: RandomAccessBytes, @unchecked Sendable {
    let source: MemoryBytes
    /// Bytes handed out so far (only the test's thread reads).
    private(set) var bytesRead = 0
    init(_ source: MemoryBytes) { self.source = source }
    var size: Int { source.size }
    func read(at offset: Int, count: Int) throws -> [UInt8] {
        let bytes = try source.read(at: offset, count: count)
        bytesRead += bytes.count
        return bytes
    }
}
