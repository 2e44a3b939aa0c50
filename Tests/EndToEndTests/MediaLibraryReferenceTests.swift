import Foundation
import Testing
import TestSupport

/// Every file of the generated library (media/make-media.sh) played by streamplay and compared
/// with its reference decoder: mpg123 for MPEG audio (bit-exact, both with the LAME tag's
/// gapless trim), ffmpeg for AAC (exact length after the alignment FFmpegAACReference states,
/// >= 60 dB), the file itself for WAV (bit-exact, same precision). The format played, `--stats`
/// and `--info` must agree. A file of a kind with no reference here fails the suite, so no file
/// can join the library untested.
@Suite(.ownThreads) struct MediaLibraryReferenceTests {
    static var streamplay: String { TestPaths.binDir.appendingPathComponent("streamplay").path }
    static let referenced: Set<String> = ["mp3", "aac", "m4a", "wav"]

    @Test func everyLibraryFileHasAReferenceDecoder() {
        let files = TestPaths.mediaFiles()
        #expect(files.count >= 14, "run `make media` first (looked in \(TestPaths.media.path))")
        for file in files {
            #expect(Self.referenced.contains(file.pathExtension.lowercased()), "\(file.lastPathComponent): no reference decoder")
        }
    }

    @Test(arguments: TestPaths.mediaFiles())
    func decodesLikeItsReferenceDecoder(file: URL) throws {
        let name = String(file.path.dropFirst(TestPaths.media.path.count + 1))
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("library-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let oursPath = dir.appendingPathComponent("ours.wav").path
        let run = try runCommand(Self.streamplay, [file.path, "--output", "wav:\(oursPath)", "--stats"])
        #expect(run.status == 0, "\(name): \(String(decoding: run.stderr, as: UTF8.self))")
        guard run.status == 0 else { return }
        let ours = try PCMFile(path: oursPath)
        let stats = try AACFormatMatrixTests.json(run.stdout)
        let info = try AACFormatMatrixTests.json(try runCommand(Self.streamplay, ["--info", file.path]).stdout)
        #expect(stats["sample_rate"] as? Int == ours.sampleRate && stats["channels"] as? Int == ours.channels,
                "\(name): --stats \(stats) vs played \(ours.sampleRate) Hz \(ours.channels) ch")
        #expect(info["sample_rate"] as? Int == ours.sampleRate && info["channels"] as? Int == ours.channels,
                "\(name): --info \(info) vs played \(ours.sampleRate) Hz \(ours.channels) ch")
        #expect(stats["frames_out"] as? Int == ours.frames, "\(name): --stats frames_out vs the WAV")

        switch file.pathExtension.lowercased() {
        case "mp3":
            let referencePath = dir.appendingPathComponent("mpg123.wav").path
            let decode = try runCommand(try #require(which("mpg123")), ["-q", "-w", referencePath, file.path])
            #expect(decode.status == 0, "\(name): mpg123 failed")
            let reference = try PCMFile(path: referencePath)
            #expect(ours.sampleRate == reference.sampleRate && ours.channels == reference.channels, "\(name): format vs mpg123's")
            #expect(ours.frames == reference.frames, "\(name): \(ours.frames) frames, mpg123 \(reference.frames)")
            #expect(ours.data == reference.data, "\(name): not bit-exact with mpg123")
            print("library | \(name) | mpg123 | ours \(ours.frames) | reference \(reference.frames) | \(ours.data == reference.data ? "bit-exact" : "DIFFERENT")")
        case "wav":
            let source = try PCMFile(path: file.path)
            #expect(ours.sampleRate == source.sampleRate && ours.channels == source.channels
                    && ours.bitsPerSample == source.bitsPerSample && ours.isFloat == source.isFloat, "\(name): format vs the file's")
            #expect(ours.frames == source.frames, "\(name): \(ours.frames) frames, the file \(source.frames)")
            #expect(ours.data == source.data, "\(name): not bit-exact with the file")
            print("library | \(name) | the file | ours \(ours.frames) | reference \(source.frames) | \(ours.data == source.data ? "bit-exact" : "DIFFERENT")")
        default:
            let reference = try FFmpegAACReference(file: file.path, wav: dir.appendingPathComponent("ffmpeg.wav").path)
            #expect(ours.sampleRate == reference.pcm.sampleRate && ours.channels == reference.pcm.channels,
                    "\(name): plays \(ours.sampleRate) Hz \(ours.channels) ch, ffmpeg \(reference.pcm.sampleRate) Hz \(reference.pcm.channels) ch")
            #expect(ours.frames == reference.expectedFrames, "\(name): \(ours.frames) frames, ffmpeg's decode \(reference.expectedFrames)")
            let snr = snrDecibels(reference: reference.samples, test: ours.samples(), offset: reference.offset, channels: ours.channels)
            #expect(snr >= 60, "\(name): SNR \(snr) dB against ffmpeg's decode")
            print("library | \(name) | ffmpeg | ours \(ours.frames) | reference \(reference.expectedFrames) (+\(reference.offset) priming, +\(reference.untrimmedTail) padding) | SNR \(String(format: "%.1f", snr)) dB")
        }
    }
}
