import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// Every Ogg file of the real-world corpus (Opus, Vorbis, FLAC-in-Ogg, Speex): rate, channels,
/// bit depth and duration against refs.tsv, read both ways (headers + last granule from the
/// end, and the full page walk), or a typed refusal named here.
@Suite struct OggCorpusTests {
    static let refused: [String: FormatError] = [
        // The comment header is missing (its page holds the setup header): no decoder reads it.
        "taglib__lowercase-fields.ogg": .invalid(component: "vorbis", reason: "header packet 2 is not of type 3", offset: 0),
        "taglib__segfault.oga": .notAudio(reason: "no Ogg page"),
    ]

    @Test func everyFileAgreesWithFFprobeOrIsRefusedAsNamed() throws {
        let references = FLACOggCorpus.references(["ogg", "oga", "opus", "spx", "oggflac"])
        try #require(!references.isEmpty, "no corpus at \(FLACOggCorpus.directory.path) (set STREAM_XIPH_CORPUS)")
        var checked = 0
        for ref in references {
            let bytes = try FLACOggCorpus.bytes(ref.file)
            if let expected = Self.refused[ref.file] {
                #expect(throws: expected, "\(ref.file)") { try OggReader.read(bytes) }
                continue
            }
            let quick: OggStream, full: OggStream
            do {
                quick = try OggReader.read(bytes)
                full = try OggReader.read(bytes, fullScan: true)
            } catch {
                Issue.record("\(ref.file): \(error)")
                continue
            }
            #expect(quick.durationSeconds == full.durationSeconds && quick.first.serial == full.first.serial, "\(ref.file)")
            #expect(quick.sampleRate == ref.rate && quick.channels == ref.channels, "\(ref.file): \(quick.sampleRate) Hz \(quick.channels) ch")
            if case .flac = quick.codec { #expect(quick.bitsPerSample == ref.bits, "\(ref.file)") }
            let seconds = quick.durationSeconds ?? -1
            let ffprobe = ref.duration ?? -2
            switch quick.codec {
            case .opus(let head):
                // ffprobe counts the pre-skip in; the reference decoder (opusdec) does not.
                let byProbe = abs(seconds - (ffprobe - Double(head.preSkip) / 48_000)) < 0.001
                let byDecoder = ref.referenceFrames.map { quick.first.samples == $0 } ?? false
                #expect(byProbe || byDecoder, "\(ref.file): \(seconds) s, ffprobe \(ffprobe), opusdec \(ref.referenceFrames ?? -1)")
            case .speex:
                // The end granule; ffprobe rounds up to whole frames (20 ms at most).
                #expect(abs(seconds - ffprobe) < 0.02, "\(ref.file): \(seconds) s, ffprobe \(ffprobe)")
            default:
                #expect(abs(seconds - ffprobe) < 0.001, "\(ref.file): \(seconds) s, ffprobe \(ffprobe)")
            }
            checked += 1
        }
        #expect(checked + Self.refused.count == references.count)
        #expect(checked >= 30)
    }

    @Test func namedFiles() throws {
        // Pages with a bad CRC (a gap) are skipped to the next good page.
        let gap = try OggReader.read(try FLACOggCorpus.bytes("androidx__bear_vorbis_gap.ogg"))
        #expect(gap.skippedBytes > 0)
        // Speex alongside a second stream.
        let multiplexed = try OggReader.read(try FLACOggCorpus.bytes("mutagen__multiplexed.spx"))
        #expect(multiplexed.first.otherSerials.count == 1)
        // The headers repeated with the same serial: one link.
        let repeated = try OggReader.read(try FLACOggCorpus.bytes("androidx__bear_duplicate_header.opus"), fullScan: true)
        #expect(repeated.links.count == 1)
        // A comment spread over several pages, with a picture.
        let cover = try OggReader.read(try FLACOggCorpus.bytes("mediafile__coverart.ogg"))
        #expect(cover.codec.name == "vorbis")
        let flac = try OggReader.read(try FLACOggCorpus.bytes("musicmeta__audio.flac.ogg"))
        #expect(flac.codec.name == "flac" && flac.tags.title == "audio.flac")
    }
}
