import Foundation
import Testing
import TestSupport
@testable import StreamRadio
import StreamHTTP
import StreamAudio
import StreamShared

/// `&offset=` on lossy sources: the decoder starts at the catalog's seek index point a second
/// before the offset (`TranscodeService.startPoint`) and keeps the samples from the exact offset
/// on. Its output equals the whole decode's from that sample on (the whole decode is the one
/// MediaLibraryReferenceTests and OggPlayerTests check against mpg123, faad, ffmpeg, opusdec and
/// oggdec): bit-exact for MP3, AAC and Vorbis, for Opus within the pre-roll's convergence.
@Suite struct TrackDecoderStartTests {
    static let media = ProcessInfo.processInfo.environment["STREAM_MEDIA_DIR"] ?? "media/out"

    static func decoder(_ path: String, _ analysis: TrackAnalysis) throws -> TrackDecoder {
        let file = try OpenFile(path: path)
        return try TrackDecoder(source: file, hints: TrackDecoder.Hints(audioStart: analysis.firstFrameOffset, audioEnd: file.size,
                                                                      encoderDelay: analysis.encoderDelay,
                                                                      encoderPadding: analysis.encoderPadding,
                                                                      totalSamples: analysis.totalSamples))
    }

    @Test(arguments: ["out/vbr-v2.mp3", "out/cbr-128k-44k.mp3", "out/speech-22k.mp3", "out/adts.aac", "out/adts-8k-mono.aac",
                      "out/track.m4a", "ogg/vorbis-stereo-44k.ogg", "ogg/vorbis-mono-22k.ogg", "ogg/opus-20s.opus",
                      "ogg/opus-stereo-48k.opus", "out/pcm16.wav", "out/pcm24-96k.wav"])
    func offset_startsAtTheIndexPoint_andEqualsTheWholeDecode(name: String) throws {
        let path = URL(fileURLWithPath: Self.media).deletingLastPathComponent().appendingPathComponent(name).path
        let analysis = try TrackAnalyzer.analyze(try OpenFile(path: path))
        var whole = try Self.decoder(path, analysis)
        var all: [Float] = []
        while try whole.decode(into: &all) {}
        let format = whole.format
        let channels = format.channels
        for offset in [2.5, analysis.durationSeconds * 0.6] {
            let sample = Int((offset * Double(analysis.sampleRate)).rounded())
            let point = try #require(TranscodeService.startPoint(analysis.seekIndex.points, offset: offset, sampleRate: analysis.sampleRate),
                                     "\(name): no index point before \(offset) s")
            #expect(point.byte > analysis.firstFrameOffset, "\(name): the point is the first frame")
            var decoder = try Self.decoder(path, analysis)
            try decoder.start(atSample: sample, from: point)
            var part: [Float] = []
            while try decoder.decode(into: &part) {}
            let expected = Array(all[min(all.count, sample * channels)...])
            #expect(part.count == expected.count, "\(name) from \(offset) s: \(part.count / channels) frames, whole decode \(expected.count / channels)")
            let n = min(part.count, expected.count)
            var error = 0.0, power = 0.0, differing = 0
            for i in 0..<n {
                let d = Double(part[i] - expected[i])
                error += d * d
                power += Double(expected[i]) * Double(expected[i])
                if part[i] != expected[i] { differing += 1 }
            }
            if name.hasSuffix(".opus") {
                // Opus after 80 ms of pre-roll converges on the whole decode, not to the bit.
                let snr = 10 * log10(power / max(error, 1e-30))
                #expect(snr > 40, "\(name) from \(offset) s: SNR \(snr) dB against the whole decode")
            } else {
                // MPEG-2 frames hold one granule: mpg123's synthesis buffer may then start in the
                // other of its two phases, which changes float rounding only (the last bits).
                var largest: Float = 0
                for i in 0..<n { largest = max(largest, abs(part[i] - expected[i])) }
                let bound: Float = name.hasSuffix("22k.mp3") ? 1e-6 : 0
                #expect(largest <= bound, "\(name) from \(offset) s: \(differing) of \(n) samples differ from the whole decode, by up to \(largest)")
            }
        }
    }
}
