import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// Every FLAC file of the real-world corpus (../shared/corpus/realworld-xiph, read in place):
/// rate, channels, bit depth and duration as ffprobe gives them in refs.tsv, or a typed refusal
/// named here for the faulty and truncated files.
@Suite struct FLACCorpusTests {
    /// The files refused, with the error each gets (the faulty ones of the IETF test set, fuzz
    /// finds of other decoders, files cut short by the test suites they come from).
    static let refused: [String: FormatError] = [
        "claxon__fuzz-5a35e45b.flac": .notAudio(reason: "no fLaC marker at offset 0"),
        "claxon__fuzz-64a18b4b.flac": .invalid(component: "flac", reason: "first frame (1 ch, 44100 Hz, 16 bits) disagrees with STREAMINFO", offset: 42),
        "claxon__fuzz-6eccabf2.flac": .outOfRange(component: "flac-streaminfo", field: "total_samples", value: "13485913.62797619 s"),
        "ietf__faulty-03_wrong_bit_depth.flac": .invalid(component: "flac", reason: "first frame (1 ch, 24000 Hz, 16 bits) disagrees with STREAMINFO", offset: 108),
        "ietf__faulty-04_wrong_number_of_channels.flac": .invalid(component: "flac", reason: "first frame (1 ch, 24000 Hz, 16 bits) disagrees with STREAMINFO", offset: 108),
        "ietf__faulty-06_missing_streaminfo_metadata_block.flac": .invalid(component: "flac", reason: "no STREAMINFO block", offset: 4),
        "ietf__faulty-08_blocksize_65536.flac": .invalid(component: "flac-streaminfo", reason: "max block size 0 below 16", offset: 2),
        "ietf__faulty-09_blocksize_1.flac": .invalid(component: "flac-streaminfo", reason: "max block size 1 below 16", offset: 2),
        "ietf__faulty-11_incorrect_metadata_block_length.flac": .invalid(component: "flac", reason: "metadata block type 127", offset: 174),
        // Raw frames without "fLaC" and metadata: not a FLAC file as RFC 9639 §6 defines one.
        "ietf__uncommon-10_file_starting_at_frame_header.flac": .notAudio(reason: "no fLaC marker at offset 0"),
        "ietf__uncommon-11_file_starting_with_unparsable_data.flac": .notAudio(reason: "no fLaC marker at offset 0"),
        "mutagen__106-invalid-streaminfo.flac": .truncated(component: "flac-streaminfo", offset: 18, needed: 16),
        "mutagen__106-short-picture-block-size.flac": .invalid(component: "flac", reason: "a second STREAMINFO", offset: 90),
        "mutagen__52-overwritten-metadata.flac": .invalid(component: "flac", reason: "no FLAC frame after the metadata", offset: 220),
        "mutagen__ooming-header.flac": .truncated(component: "flac", offset: 86, needed: 4),
        "tlsharp__a.flac": .truncated(component: "flac", offset: 0, needed: 4),
    ]

    @Test func everyFileAgreesWithFFprobeOrIsRefusedAsNamed() throws {
        let references = FLACOggCorpus.references(["flac"])
        try #require(!references.isEmpty, "no corpus at \(FLACOggCorpus.directory.path) (set STREAM_XIPH_CORPUS)")
        var checked = 0
        for ref in references {
            let bytes = try FLACOggCorpus.bytes(ref.file)
            if let expected = Self.refused[ref.file] {
                #expect(throws: expected, "\(ref.file)") { try FLACReader.read(bytes) }
                continue
            }
            let stream: FLACStream
            do { stream = try FLACReader.read(bytes) } catch {
                Issue.record("\(ref.file): \(error)")
                continue
            }
            let info = stream.streamInfo
            // A file whose STREAMINFO follows other blocks: ffprobe gives up, this reads it (the
            // first frame's header agrees with it).
            let rate = ref.rate ?? stream.firstFrame.sampleRate, channels = ref.channels ?? stream.firstFrame.channels
            let bits = ref.bits ?? stream.firstFrame.bitsPerSample
            #expect(info.sampleRate == rate && info.channels == channels && info.bitsPerSample == bits,
                    "\(ref.file): \(info.sampleRate) Hz \(info.channels) ch \(info.bitsPerSample) bits")
            if let duration = ref.duration {
                #expect(abs((stream.durationSeconds ?? -1) - duration) < 0.001, "\(ref.file): \(stream.durationSeconds ?? -1) s, ffprobe \(duration)")
            } else if let frames = ref.referenceFrames {
                // No duration from ffprobe (total_samples 0): the last frame's count against the flac decoder's output.
                #expect(stream.totalSamples == frames, "\(ref.file): \(stream.totalSamples ?? -1) samples, flac decoded \(frames)")
            } else {
                // No reference count at all (the rate or channels change mid-stream): the count is still known.
                #expect(stream.totalSamples != nil, "\(ref.file): no sample count")
            }
            checked += 1
        }
        #expect(checked + Self.refused.count == references.count)
        #expect(checked >= 55)
    }

    /// What the corpus files carry besides the stream: an ID3v2 tag in front, a picture, an
    /// APE tag behind, a count of 0 read from the last frame.
    @Test func namedFiles() throws {
        let id3 = try FLACReader.read(try FLACOggCorpus.bytes("androidx__bear_with_id3.flac"))
        #expect(id3.leadingTagBytes > 0 && id3.audioStart == id3.metadataEnd)
        let picture = try FLACReader.read(try FLACOggCorpus.bytes("androidx__bear_with_picture.flac"))
        #expect(picture.pictures.count == 1 && picture.tags.coverArtBytes == picture.pictures.first?.data.count)
        let noCount = try FLACReader.read(try FLACOggCorpus.bytes("ietf__subset-45_no_total_number_of_samples_set.flac"))
        #expect(noCount.streamInfo.totalSamples == 0 && noCount.totalSamples == 336_410)
        let placeholder = try FLACReader.read(try FLACOggCorpus.bytes("androidx__bear_placeholder_seek_point_only.flac"))
        #expect(placeholder.seekPoints.allSatisfy { $0.sampleNumber == nil } && !placeholder.seekPoints.isEmpty)
        // The same file behind an ID3v2 tag and before APE and ID3v1 tags: the count from the
        // last frame is found where the audio ends, not at the end of the file.
        let original = try FLACOggCorpus.bytes("ietf__subset-45_no_total_number_of_samples_set.flac").bytes
        let apeFooter = Array("APETAGEX".utf8) + FLACOggBuilders.le32(2000) + FLACOggBuilders.le32(32) + [UInt8](repeating: 0, count: 16)
        let wrapped = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0, 10] + [UInt8](repeating: 0, count: 10) + original
            + apeFooter + Array("TAG".utf8) + [UInt8](repeating: 0x20, count: 125)
        let tagged = try FLACReader.read(MemoryBytes(wrapped))
        #expect(tagged.leadingTagBytes == 20 && tagged.audioEnd == wrapped.count - 160 && tagged.totalSamples == 336_410)
        let badComment = try FLACReader.read(try FLACOggCorpus.bytes("ietf__faulty-10_invalid_vorbis_comment_metadata_block.flac"))
        #expect(badComment.unreadableBlocks == 1 && badComment.comment == nil)
    }
}
