import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// A transcoding channel decodes its tracks in `streamd decode-worker` processes, on the real
/// streamd: a file whose decoder crashes mid-track, one whose header lies, and files the
/// analyzer rejects each cost their turn with a log line; the listener hears the good track
/// again and again, and streamd serves on.
@Suite(.ownThreads) struct RadioDecodeIsolationTests {
    /// 1-good.mp3 (440 Hz), 2-crash.m4a (660 Hz; the fault hook traps its worker after the
    /// first samples, as libfaad2 crashing on a crafted frame would), 3-truncated.m4a (half a
    /// file: the analyzer rejects it), 4-notaudio.mp3 (words), 5-liar.wav (a header saying 1 Hz).
    static func makeLibrary() throws -> URL {
        let library = try RadioTranscodeTests.makeLibrary([
            ("1-good.mp3", 440, 2, ["-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k"]),
            ("2-crash.m4a", 660, 2, ["-ac", "2", "-ar", "48000", "-c:a", "aac", "-b:a", "128k"]),
            ("whole.m4a", 880, 4, ["-ac", "2", "-ar", "48000", "-c:a", "aac", "-b:a", "128k", "-movflags", "+faststart"]),
        ])
        let mix = library.appendingPathComponent("mix")
        let whole = try Data(contentsOf: mix.appendingPathComponent("whole.m4a"))
        try whole.prefix(whole.count / 2).write(to: mix.appendingPathComponent("3-truncated.m4a"))
        try FileManager.default.removeItem(at: mix.appendingPathComponent("whole.m4a"))
        try Data("plain words, no audio in here".utf8).write(to: mix.appendingPathComponent("4-notaudio.mp3"))
        try Data(Self.wav(rate: 1, frames: 8_192)).write(to: mix.appendingPathComponent("5-liar.wav"))
        return library
    }

    /// A 16-bit stereo WAV of silence with `rate` in its header.
    static func wav(rate: Int, frames: Int) -> [UInt8] {
        let data = [UInt8](repeating: 0, count: frames * 4)
        let fmt = le16(1) + le16(2) + le32(rate) + le32(rate * 4) + le16(4) + le16(16)
        return Array("RIFF".utf8) + le32(4 + 8 + fmt.count + 8 + data.count) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(fmt.count) + fmt + Array("data".utf8) + le32(data.count) + data
    }

    @Test(.timeLimit(.scaledMinutes(3))) func badFilesInATranscodingChannel_areSkipped_andStreamdServesOn() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--channel", "mix=mix"],
                                        decoderFault: "trap:2-crash.m4a")
        defer { server.stop() }
        let socket = try RawConnection(port: server.port)
        socket.send("GET /radio/mix HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        // Long enough for two passes of the playlist (its one good track is 2 s).
        let seconds = TestTiming.seconds(7)
        let (received, end) = socket.readUntilEnd(quiet: 3, limit: seconds)
        #expect(end == .open, "the listener is still served")
        // streamd answers and the channel still has its listener: asked now, while this listener
        // has only just stopped reading (the decoding below takes long under a sanitizer, and a
        // listener that stops reading for that long is rightly dropped as too slow).
        let channels = try RawConnection(port: server.port).request("GET", "/api/channels")
        #expect(channels.status == 200)
        let listing = String(decoding: channels.body, as: UTF8.self)
        #expect(listing.contains("\"listeners\":1"), "\(listing)")
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw TestFailure("no response head") }
        let audio = Array(received[split.upperBound...])
        // The burst (64 KiB) and then the stream at 128 kbit/s, with room for a loaded machine.
        #expect(audio.count > 64 * 1024 + 3 * 16_000, "\(audio.count) bytes in \(seconds) s")
        let (frames, frameEnd) = try RadioTranscodeTests.frames(audio)
        #expect(audio.count - frameEnd < 1500, "not frames back to back: stopped at \(frameEnd) of \(audio.count)")
        #expect(Set(frames.map { "\($0.sampleRate) Hz \($0.channels) ch" }) == ["44100 Hz 2 ch"])
        // The good track (2 s) is heard for more than one pass: the channel went on after every
        // bad file (from the second pass on, the crashing one is skipped without a worker, so the
        // passes join into one stretch). Of the crashing track, only its first unit is heard.
        let heard = RadioTranscodeTests.segments(try RadioTranscodeTests.decode(audio), tones: [440, 660])
        let good = heard.filter { $0.hz == 440 }.reduce(0) { $0 + $1.end - $1.start }
        let crashing = heard.filter { $0.hz == 660 }.reduce(0) { $0 + $1.end - $1.start }
        #expect(good > 3 * 44_100, "\(good) samples of 440 Hz")
        #expect(crashing < 44_100 / 10, "\(crashing) samples of 660 Hz")

        // Each bad file has its line: the crash (with the worker's last words), then the
        // quarantine on the next pass, the lying header, and the analyzer's rejections.
        #expect(RadioTranscodeTests.logShows("2-crash.m4a: decoder crashed (signal 4): Fatal error", server), "\(server.log)")
        #expect(RadioTranscodeTests.logShows("2-crash.m4a: skipped: its decoder crashed or stalled on it before", server),
                "\(server.log)")
        #expect(RadioTranscodeTests.logShows("5-liar.wav: dsp: cannot resample 1 Hz", server), "\(server.log)")
        #expect(RadioTranscodeTests.logShows("skipping \(library.path)/mix/3-truncated.m4a", server), "\(server.log)")
        #expect(RadioTranscodeTests.logShows("skipping \(library.path)/mix/4-notaudio.mp3", server), "\(server.log)")
        #expect(!server.log.contains("no track can be played"))

        #expect(server.process.isRunning, "streamd is still running")
    }
}
