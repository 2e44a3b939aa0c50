import Foundation
import Testing
import TestSupport
import StreamAudio
import StreamShared

/// `FLACConverter` (libFLAC behind `FLACDecoder`) fed as the player feeds it: in pieces of any
/// size, restarted at a seek point, cut short, with junk between frames.
@Suite struct FLACConverterTests {
    /// The generated 16-bit stereo FLAC with its seek table, and what Probe says of it.
    static func file() throws -> (bytes: [UInt8], stream: ProbedStream, flac: FLACMetadataPrefix)? {
        let url = TestPaths.losslessMedia.appendingPathComponent("flac16-44k.flac")
        guard FileManager.default.fileExists(atPath: url.path) else {
            if GeneratedMedia.isRequired { Issue.record("\(url.path) is missing: run make media") }
            return nil
        }
        let bytes = [UInt8](try Data(contentsOf: url))
        guard case .audio(let stream) = try Probe.probe(bytes[...], isComplete: true), let flac = stream.flac else {
            throw TestFailure("not probed as FLAC")
        }
        return (bytes, stream, flac)
    }

    /// Every sample decoded from `bytes[start...]`, appended `piece` bytes at a time.
    static func decode(_ bytes: [UInt8], flac: FLACMetadataPrefix, audioStart: Int, from start: Int, piece: Int) throws
        -> (samples: [Float], report: String?) {
        var converter = try FLACConverter(streamInfo: flac.streamInfo, audioStart: audioStart)
        try converter.restart(at: start)
        var out: [Float] = []
        var at = start
        while at < bytes.count {
            converter.append(Array(bytes[at..<min(bytes.count, at + piece)]))
            at += piece
            while try converter.convertNext(isComplete: false, { out.append(contentsOf: $0) }) {}
        }
        while try converter.convertNext(isComplete: true, { out.append(contentsOf: $0) }) {}
        return (out, converter.damageReport)
    }

    @Test func piecesOfAnySize_giveTheSameSamples() throws {
        guard let (bytes, stream, flac) = try Self.file() else { return }
        let whole = try Self.decode(bytes, flac: flac, audioStart: stream.firstFrameOffset, from: 0, piece: bytes.count)
        #expect(whole.samples.count == flac.streamInfo.totalSamples * 2 && whole.report == nil)
        for piece in [13, 1000, 65_536] {
            let pieces = try Self.decode(bytes, flac: flac, audioStart: stream.firstFrameOffset, from: 0, piece: piece)
            #expect(pieces.samples == whole.samples, "pieces of \(piece) bytes")
        }
        // From a seek point: the samples from its sample number on, the first frame's number reported.
        let point = try #require(flac.seekPoints.last { $0.sampleNumber ?? 0 > 0 })
        let sample = try #require(point.sampleNumber)
        let sought = try Self.decode(bytes, flac: flac, audioStart: stream.firstFrameOffset,
                                     from: stream.firstFrameOffset + point.byteOffset, piece: 4096)
        #expect(sought.samples == Array(whole.samples[(sample * 2)...]))
    }

    @Test func cutShortAndJunk_areSaidNotFatal() throws {
        guard let (bytes, stream, flac) = try Self.file() else { return }
        let whole = try Self.decode(bytes, flac: flac, audioStart: stream.firstFrameOffset, from: 0, piece: bytes.count)
        // Cut in the middle of the audio: the frames before the cut play, the cut frame is said.
        let cut = Array(bytes.prefix(bytes.count / 2 + 77))
        let short = try Self.decode(cut, flac: flac, audioStart: stream.firstFrameOffset, from: 0, piece: 4096)
        #expect(!short.samples.isEmpty && short.samples.count < whole.samples.count)
        #expect(short.samples == Array(whole.samples.prefix(short.samples.count)))
        // 100 KB of junk between two frames (more than any frame of this stream): skipped, decoding resumes.
        let point = try #require(flac.seekPoints.last { $0.sampleNumber ?? 0 > 0 })
        let at = stream.firstFrameOffset + point.byteOffset
        let junk = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        let spliced = Array(bytes[..<at]) + junk + Array(bytes[at...])
        let resumed = try Self.decode(spliced, flac: flac, audioStart: stream.firstFrameOffset, from: 0, piece: 8192)
        #expect(resumed.report != nil, "the junk is reported")
        let sample = try #require(point.sampleNumber)
        #expect(resumed.samples.prefix(sample * 2) == whole.samples.prefix(sample * 2))
        #expect(resumed.samples.suffix(20_000) == whole.samples.suffix(20_000), "decoding resumes after the junk")
    }
}
