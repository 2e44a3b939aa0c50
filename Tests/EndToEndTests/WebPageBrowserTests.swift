import Foundation
import Testing
import TestSupport

/// The library page in a real headless Chromium (Tests/browser/check_page.py drives it): small
/// HTML, the album grid with covers, search as you type within 300 ms, an album played in order
/// from track to track, and every track of the library found by searching and played.
@Suite(.ownThreads) struct WebPageBrowserTests {
    @Test(.timeLimit(.scaledMinutes(3))) func pagePlaysEveryTrackInChromium() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/browser/check_page.py").path
        let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-page-\(getpid()).png")
        defer { try? FileManager.default.removeItem(at: screenshot) }
        let result = try runCommand(try #require(which("python3")), [script, server.baseURL, "--every-track", "--advances", "3",
                                                                    "--screenshot", screenshot.path],
                                    timeout: 150)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 0, "\(output)")
        #expect(output.contains(" passed, 0 failed"), "\(output)")
        #expect(FileManager.default.fileExists(atPath: screenshot.path), "a screenshot was taken")
    }

    /// FLAC and Ogg Opus play natively in Chromium (audio/flac, audio/ogg; codecs=opus): a library
    /// of one FLAC with an embedded cover and one Opus file, each found, played past half a
    /// second with no media error, its duration as the catalog says, and the FLAC's cover shown.
    @Test(.timeLimit(.scaledMinutes(2))) func pagePlaysFLACAndOpusAndShowsTheFLACCover() throws {
        let library = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: library) }
        func run(_ tool: String, _ arguments: [String]) throws {
            let result = try runCommand(try #require(which(tool), "\(tool) is installed by make deps"), arguments)
            try #require(result.status == 0, "\(tool): \(String(decoding: result.stderr, as: UTF8.self))")
        }
        let flacAlbum = library.appendingPathComponent("Lossless Artist/Lossless Album")
        let opusAlbum = library.appendingPathComponent("Opus Artist/Opus Album")
        for folder in [flacAlbum, opusAlbum] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let wav = library.appendingPathComponent("tone.wav").path, cover = library.appendingPathComponent("cover.png").path
        try run("sox", ["-R", "-n", "-r", "48000", "-c", "2", "-b", "16", wav, "synth", "3", "sine", "440", "gain", "-12"])
        try run("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=teal:s=64x64", "-frames:v", "1", cover])
        let flac = flacAlbum.appendingPathComponent("01 Lossless Tone.flac").path
        try run("flac", ["--silent", "-T", "TITLE=Lossless Tone", "-T", "ARTIST=Lossless Artist", "-T", "ALBUM=Lossless Album",
                         "--picture=3||||\(cover)", "-o", flac, wav])
        try run("opusenc", ["--quiet", "--title", "Opus Tone", "--artist", "Opus Artist", "--album", "Opus Album",
                            wav, opusAlbum.appendingPathComponent("01 Opus Tone.opus").path])
        try FileManager.default.removeItem(atPath: wav)
        try FileManager.default.removeItem(atPath: cover)
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        defer { _ = server.stop() }
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/browser/check_page.py").path
        let result = try runCommand(try #require(which("python3")), [script, server.baseURL, "--every-track", "--advances", "0",
                                                                    "--min-covers", "1"],
                                    timeout: 100)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        print(output)
        #expect(result.status == 0, "\(output)")
        #expect(output.contains(" passed, 0 failed"), "\(output)")
        #expect(output.contains(".flac: played") && output.contains(".opus: played"), "\(output)")
    }
}
