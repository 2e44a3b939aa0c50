import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// Radio channels whose tracks differ in codec, rate and channel count, on the real streamd:
/// transcoded once per channel to one MP3 stream, each track's sound kept (tones of their own
/// frequency), gapless joins, the stream at its bitrate in real time; tracks that cannot be
/// read are skipped with a warning, and a channel left with none ends.
@Suite(.ownThreads) struct RadioTranscodeTests {
    /// The tracks of the mixed folder, in path order: name, tone, length, how ffmpeg makes them.
    /// Every tone fills whole cycles, so the stream is continuous at the joins when the trims are right.
    static let tracks: [(name: String, hz: Double, seconds: Double, encode: [String])] = [
        ("1-stereo44.mp3", 440, 2.5, ["-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k"]),
        ("2-mono22.mp3", 660, 2.0, ["-ac", "1", "-ar", "22050", "-c:a", "libmp3lame", "-b:a", "64k"]),
        ("3-aac48.m4a", 880, 2.0, ["-ac", "2", "-ar", "48000", "-c:a", "aac", "-b:a", "128k"]),
        ("4-pcm96.wav", 1320, 2.0, ["-ac", "2", "-ar", "96000", "-c:a", "pcm_s16le"]),
    ]
    static let rate = 44_100.0
    /// ffmpeg's sine amplitude.
    static let amplitude = 0.125

    static func makeLibrary(_ tracks: [(name: String, hz: Double, seconds: Double, encode: [String])] = tracks) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-transcode-\(getpid())-\(UUID().uuidString.prefix(8))")
        let mix = dir.appendingPathComponent("mix")
        try FileManager.default.createDirectory(at: mix, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        for track in tracks {
            let result = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i",
                                                 "sine=frequency=\(Int(track.hz)):sample_rate=96000:duration=\(track.seconds)"]
                                        + track.encode + [mix.appendingPathComponent(track.name).path])
            guard result.status == 0 else {
                throw TestFailure("ffmpeg could not make \(track.name): \(String(decoding: result.stderr, as: UTF8.self))")
            }
        }
        return dir
    }

    /// `mp3` decoded by ffmpeg to mono float samples at 44.1 kHz.
    static func decode(_ mp3: [UInt8]) throws -> [Float] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("transcode-\(getpid())-\(UUID().uuidString.prefix(8)).mp3")
        try Data(mp3).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let ffmpeg = try #require(which("ffmpeg"))
        let result = try runCommand(ffmpeg, ["-v", "error", "-f", "mp3", "-i", file.path, "-ac", "1", "-ar", "44100", "-f", "f32le", "-"])
        #expect(result.status == 0, "ffmpeg: \(String(decoding: result.stderr, as: UTF8.self))")
        return result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Amplitude of the `hz` component of `x` (a Hann-windowed projection).
    static func amplitude(_ x: ArraySlice<Float>, hz: Double) -> Double {
        var c = 0.0, s = 0.0, w = 0.0
        let n = x.count
        for (k, value) in x.enumerated() {
            let hann = 0.5 - 0.5 * cos(2 * Double.pi * Double(k) / Double(n - 1))
            let phase = 2 * Double.pi * hz * Double(k) / rate
            c += Double(value) * hann * cos(phase)
            s += Double(value) * hann * sin(phase)
            w += hann
        }
        return 2 * (c * c + s * s).squareRoot() / w
    }

    /// The tone heard in each stretch of `samples`: (frequency or 0 for none, start, end) in
    /// samples, from 20 ms windows every 5 ms.
    static func segments(_ samples: [Float], tones: [Double]) -> [(hz: Double, start: Int, end: Int)] {
        let window = 882, hop = 220
        var result: [(hz: Double, start: Int, end: Int)] = []
        var at = 0
        while at + window <= samples.count {
            let levels = tones.map { amplitude(samples[at..<(at + window)], hz: $0) }
            let best = levels.indices.max { levels[$0] < levels[$1] } ?? 0
            // A window across a join holds half of each tone: the louder one names it. Silence
            // (a gap) is what holds neither.
            let hz = levels[best] > amplitude * 0.2 ? tones[best] : 0
            let center = at + window / 2
            if let last = result.last, last.hz == hz {
                result[result.count - 1].end = center + hop / 2
            } else {
                result.append((hz, center - hop / 2, center + hop / 2))
            }
            at += hop
        }
        return result
    }

    /// Signal-to-noise ratio (dB) of `x` against the best-fitting sine of `hz` over 100 ms
    /// blocks (whole cycles of every tone here, so the projection is the least-squares fit).
    static func snr(_ x: ArraySlice<Float>, hz: Double) -> Double {
        let block = 4410
        var signal = 0.0, noise = 0.0
        var start = x.startIndex
        while start + block <= x.endIndex {
            var c = 0.0, s = 0.0
            for k in 0..<block {
                let phase = 2 * Double.pi * hz * Double(k) / rate
                c += Double(x[start + k]) * cos(phase)
                s += Double(x[start + k]) * sin(phase)
            }
            c *= 2 / Double(block)
            s *= 2 / Double(block)
            for k in 0..<block {
                let phase = 2 * Double.pi * hz * Double(k) / rate
                let fit = c * cos(phase) + s * sin(phase)
                signal += fit * fit
                noise += (Double(x[start + k]) - fit) * (Double(x[start + k]) - fit)
            }
            start += block
        }
        return 10 * log10(signal / max(noise, 1e-20))
    }

    /// Every MPEG frame of `audio`: all must follow each other with no gap.
    static func frames(_ audio: [UInt8]) throws -> (frames: [AudioFrameSplitter.Frame], end: Int) {
        var splitter = AudioFrameSplitter(codec: .mpeg)
        var offset = 0
        var frames: [AudioFrameSplitter.Frame] = []
        while offset < audio.count {
            guard case .frame(let frame) = try splitter.next(in: audio[offset...]), offset + frame.length <= audio.count else { break }
            frames.append(frame)
            offset += frame.length
        }
        return (frames, offset)
    }

    @Test(.timeLimit(.scaledMinutes(3))) func mixedFolder_isOneMP3Stream_withEveryTrackWholeAndInTime() throws {
        try Self.expectWholeAndInTime(Self.tracks, burstKB: 256, pacedSeconds: 8)
    }

    /// The lossless and Ogg formats in one folder with an MP3: FLAC (24-bit 96 kHz), Opus,
    /// Vorbis, AIFF (mono 22.05 kHz), ALAC (24-bit) decoded by the workers and transcoded like the others.
    static let losslessAndOggTracks: [(name: String, hz: Double, seconds: Double, encode: [String])] = [
        ("1-flac24.flac", 440, 1.5, ["-ac", "2", "-ar", "96000", "-c:a", "flac", "-sample_fmt", "s32"]),
        ("2-opus.opus", 660, 1.5, ["-ac", "2", "-ar", "48000", "-c:a", "libopus", "-b:a", "160k"]),
        ("3-vorbis.ogg", 880, 1.5, ["-ac", "2", "-ar", "44100", "-c:a", "libvorbis", "-q:a", "6"]),
        ("4-aiff.aiff", 1100, 1.5, ["-ac", "1", "-ar", "22050", "-c:a", "pcm_s16be"]),
        ("5-alac.m4a", 1320, 1.5, ["-ac", "2", "-ar", "48000", "-c:a", "alac", "-sample_fmt", "s32p"]),
        ("6-stereo.mp3", 1760, 1.5, ["-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "192k"]),
    ]

    @Test(.timeLimit(.scaledMinutes(3))) func losslessAndOggFolder_isOneMP3Stream_withEveryTrackWholeAndInTime() throws {
        try Self.expectWholeAndInTime(Self.losslessAndOggTracks, burstKB: 64, pacedSeconds: 6)
    }

    /// A channel over a folder of `tracks` (made by `makeLibrary`): one MP3 stream at 44.1 kHz
    /// stereo 128 kbit/s, each track's tone whole and in folder order, no gap at a join, and the
    /// stream at its pace for `pacedSeconds` after a burst of `burstKB`.
    static func expectWholeAndInTime(_ tracks: [(name: String, hz: Double, seconds: Double, encode: [String])],
                                     burstKB: Int, pacedSeconds seconds: Double) throws {
        let library = try Self.makeLibrary(tracks)
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "mix=mix", "--burst-kb", "\(burstKB)"])
        defer { server.stop() }
        // The burst first (however long a loaded machine takes to encode it), then 3 s in which
        // the channel catches up the time that took (a debug build under load: seconds), then
        // `seconds` of the stream at its pace: the rate is measured over those only.
        let socket = try RawConnection(port: server.port)
        socket.send("GET /radio/mix HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        var received: [UInt8] = []
        let burstDeadline = Date().addingTimeInterval(TestTiming.seconds(20))
        while received.count < burstKB * 1024 + 1024, Date() < burstDeadline {
            received += socket.readUntilEnd(quiet: 0.2, limit: 0.2).bytes
        }
        received += socket.readUntilEnd(quiet: 3, limit: 3).bytes
        let paced = socket.readUntilEnd(quiet: seconds, limit: seconds).bytes
        received += paced
        guard let split = received.firstRange(of: Array("\r\n\r\n".utf8)) else { throw TestFailure("no response head") }
        let head = String(decoding: received[..<split.lowerBound], as: UTF8.self)
        let body = Array(received[split.upperBound...])
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(RadioEndToEndTests.header("Content-Type", in: head) == "audio/mpeg")
        #expect(RadioEndToEndTests.header("icy-br", in: head) == "128")
        #expect(server.log.contains("transcoded to MP3 44100 Hz stereo 128 kbit/s"), "\(server.log)")
        let audio = try RadioEndToEndTests.dechunk(body)

        // The status page and the live HLS tell the channel's one format.
        let connection = try RawConnection(port: server.port)
        let status = String(decoding: try connection.request("GET", "/api/channels").body, as: UTF8.self)
        #expect(status.contains("\"sample_rate\":44100") && status.contains("\"channels\":2")
                && status.contains("\"bitrate_kbps\":128"), "\(status)")
        let playlist = String(decoding: try connection.request("GET", "/radio/mix/index.m3u8").body, as: UTF8.self)
        #expect(playlist.contains("#EXTINF") && !playlist.contains("#EXT-X-DISCONTINUITY"), "\(playlist)")

        // One format from the first byte to the last: 44.1 kHz stereo 128 kbit/s frames back to back.
        let (frames, end) = try Self.frames(audio)
        #expect(audio.count - end < 1500, "not frames back to back: stopped at \(end) of \(audio.count)")
        #expect(frames.count > 400)
        let formats = Set(frames.map { "\($0.sampleRate) Hz \($0.channels) ch \($0.bitrate) bit/s" })
        #expect(formats == ["44100 Hz 2 ch 128000 bit/s"], "\(formats)")

        // Real time: after the burst (`burstKB` at once), the channel's clock sends 16,000 bytes a
        // second (the chunked framing adds a few bytes per write: well under 1 %).
        let rate = Double(paced.count) / seconds
        #expect(abs(rate / 16_000 - 1) < 0.1, """
            \(Int(rate)) bytes/s after the burst, 16,000 expected; \
            stalls logged: \(server.log.split(separator: "\n").filter { $0.contains("stalled") })
            """)

        // Each track's tone, whole, in path order; every stretch inside the received audio lasts
        // as long as its track, within two MP3 frames (plus the 5 ms analysis step).
        let pcm = try Self.decode(Array(audio))
        let tones = tracks.map(\.hz)
        let heard = Self.segments(pcm, tones: tones)
        let inner = heard.dropFirst().dropLast()
        #expect(inner.count >= 5, "\(heard.map { "\($0.hz)@\(Double($0.start) / Self.rate)" })")
        let tolerance = 2 * 1152 / Self.rate + 0.005
        for part in inner {
            let track = try #require(tracks.first { $0.hz == part.hz }, "a stretch of \(part.hz) Hz (0: no tone) at \(Double(part.start) / Self.rate) s")
            let length = Double(part.end - part.start) / Self.rate
            #expect(abs(length - track.seconds) <= tolerance,
                    "\(track.name): \(length) s heard, \(track.seconds) s long")
            // The sound itself: the tone and little else (a wrong rate moves the tone, a wrong
            // channel layout or a broken resampler adds noise).
            let margin = Int(0.03 * Self.rate)
            let snr = Self.snr(pcm[(part.start + margin)..<(part.end - margin)], hz: part.hz)
            #expect(snr > 35, "\(track.name): SNR \(snr) dB")
        }
        for (a, b) in zip(inner, inner.dropFirst()) {
            let i = try #require(tones.firstIndex(of: a.hz)), j = try #require(tones.firstIndex(of: b.hz))
            #expect(j == (i + 1) % tones.count, "\(a.hz) Hz followed by \(b.hz) Hz: not the folder's order")
        }
        // No gap at a join: no 5 ms stretch is quiet (an untrimmed encoder delay or padding would be 12-50 ms of silence).
        let from = heard.first.map { $0.end } ?? 0, to = heard.last.map { $0.start } ?? pcm.count
        var quietest = Double.infinity, quietestAt = 0
        var at = from
        while at + 220 <= to {
            let rms = (pcm[at..<(at + 220)].reduce(0.0) { $0 + Double($1) * Double($1) } / 220).squareRoot()
            if rms < quietest { (quietest, quietestAt) = (rms, at) }
            at += 110
        }
        #expect(quietest > Self.amplitude / 2.squareRoot() * 0.3, "a quiet stretch (RMS \(quietest)) at \(Double(quietestAt) / Self.rate) s")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func unreadableTracks_areSkipped_andAChannelWithNoneEnds() throws {
        let short = [Self.tracks[0], Self.tracks[3]].map { ($0.name, $0.hz, 1.0, $0.encode) }
        let library = try Self.makeLibrary(short)
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "mix=mix"])
        defer { server.stop() }
        let socket = try RawConnection(port: server.port)
        socket.send("GET /radio/mix HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        _ = socket.readUntilEnd(quiet: 1, limit: 1)
        // The WAV goes: the channel says so and plays on with the MP3.
        try FileManager.default.removeItem(at: library.appendingPathComponent("mix/4-pcm96.wav"))
        let (during, stillOpen) = socket.readUntilEnd(quiet: 3, limit: 4)
        #expect(stillOpen == .open)
        #expect(during.count > 40_000, "\(during.count) bytes in 4 s with one track left")
        #expect(Self.logShows("4-pcm96.wav", server), "\(server.log)")
        // The MP3 goes too: the channel says it has nothing left and its listeners are closed.
        try FileManager.default.removeItem(at: library.appendingPathComponent("mix/1-stereo44.mp3"))
        let (_, ended) = socket.readUntilEnd(quiet: TestTiming.seconds(15), limit: TestTiming.seconds(20))
        #expect(ended == .eof, "the listener of an ended channel is closed")
        #expect(Self.logShows("no track can be played", server), "\(server.log)")
        // The server itself goes on.
        let connection = try RawConnection(port: server.port)
        #expect(try connection.request("GET", "/api/channels").status == 200)
    }

    /// A channel of one format passes its frames as they are; when a track's file turns out, at
    /// its turn, to be of another rate and channel count (it was replaced after the catalog read
    /// it), the channel goes on transcoding to its own format instead of changing it mid-stream.
    @Test(.timeLimit(.scaledMinutes(3))) func trackOfAnotherFormatArriving_switchesTheChannelToTranscoding() throws {
        let same: [(name: String, hz: Double, seconds: Double, encode: [String])] = [
            ("a.mp3", 440, 2, ["-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k"]),
            ("b.mp3", 660, 2, ["-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k"]),
        ]
        let library = try Self.makeLibrary(same)
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "sw=mix", "--burst-kb", "16"])
        defer { server.stop() }
        let socket = try RawConnection(port: server.port)
        socket.send("GET /radio/sw HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        var bytes = socket.readUntilEnd(quiet: 1, limit: 1).bytes
        #expect(!server.log.contains("transcodes"), "one format: frames pass as they are")
        // b.mp3 becomes 22.05 kHz mono (a new file renamed over it).
        let ffmpeg = try #require(which("ffmpeg"))
        let replacement = library.appendingPathComponent("b-new.mp3")
        let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=880:duration=2",
                                           "-ac", "1", "-ar", "22050", "-c:a", "libmp3lame", "-b:a", "64k", replacement.path])
        #expect(made.status == 0)
        #expect(rename(replacement.path, library.appendingPathComponent("mix/b.mp3").path) == 0)
        bytes += socket.readUntilEnd(quiet: 3, limit: TestTiming.seconds(9)).bytes
        #expect(Self.logShows("the channel transcodes from now on", server), "\(server.log)")
        guard let split = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { throw TestFailure("no response head") }
        let audio = Array(bytes[split.upperBound...])
        let (frames, end) = try Self.frames(audio)
        #expect(audio.count - end < 1500, "not frames back to back: stopped at \(end) of \(audio.count)")
        let formats = Set(frames.map { "\($0.sampleRate) Hz \($0.channels) ch" })
        #expect(formats == ["44100 Hz 2 ch"], "\(formats)")
        // The new b is heard (through the encoder), as is a.
        let heard = Set(Self.segments(try Self.decode(audio), tones: [440, 660, 880]).filter { $0.end - $0.start > 22_050 }.map(\.hz))
        #expect(heard.isSuperset(of: [440, 880]), "\(heard)")
    }

    /// A 5.1 AAC track is mixed down by its speakers: the centre on both sides, the front left
    /// on the left only (libfaad2 puts the channels out in its own order, not the file's).
    @Test(.timeLimit(.scaledMinutes(3))) func surroundTrack_isMixedDownBySpeaker() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-surround-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("s"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = try #require(which("ffmpeg"))
        // 880 Hz on the front left, 440 Hz on the centre, silence elsewhere (ffmpeg's 5.1: FL FR FC LFE BL BR).
        let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=880:duration=4:sample_rate=48000",
                                           "-f", "lavfi", "-i", "sine=frequency=440:duration=4:sample_rate=48000",
                                           "-f", "lavfi", "-i", "anullsrc=r=48000:cl=mono", "-filter_complex",
                                           "[2:a]atrim=duration=4,asplit=4[z1][z2][z3][z4];[0:a][z1][1:a][z2][z3][z4]join=inputs=6:channel_layout=5.1[a]",
                                           "-map", "[a]", "-c:a", "aac", "-b:a", "256k", dir.appendingPathComponent("s/surround.m4a").path])
        #expect(made.status == 0, "\(String(decoding: made.stderr, as: UTF8.self))")
        let server = try StreamdProcess(folder: dir, extraArguments: ["--quiet", "--channel", "s=s"])
        defer { server.stop() }
        let (_, body) = try RadioEndToEndTests.listen(port: server.port, path: "/radio/s", seconds: 3)
        let file = dir.appendingPathComponent("heard.mp3")
        try Data(try RadioEndToEndTests.dechunk(body)).write(to: file)
        let decoded = try runCommand(ffmpeg, ["-v", "error", "-i", file.path, "-ac", "2", "-ar", "44100", "-f", "f32le", "-"])
        let stereo = decoded.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frames = stereo.count / 2
        // A require, not an expect: the windows below index into the decode.
        try #require(frames > 44_100 * 3, "\(frames) frames")
        let from = frames / 4, to = from + 8820
        let left = (from..<to).map { stereo[2 * $0] }, right = (from..<to).map { stereo[2 * $0 + 1] }
        let leftCentre = Self.amplitude(left[...], hz: 440), rightCentre = Self.amplitude(right[...], hz: 440)
        let leftFront = Self.amplitude(left[...], hz: 880), rightFront = Self.amplitude(right[...], hz: 880)
        #expect(leftCentre > 0.02 && abs(leftCentre - rightCentre) < 0.1 * leftCentre, "centre: L \(leftCentre) R \(rightCentre)")
        #expect(leftFront > 0.03 && rightFront < 0.05 * leftFront, "front left: L \(leftFront) R \(rightFront)")
    }

    /// Whether the server's log shows `text` within 30 s (its stderr is read by another thread,
    /// which may come after what the server sent the listener).
    static func logShows(_ text: String, _ server: StreamdProcess) -> Bool {
        // A bound for a hang, not a speed check (it returns at the first sight): on a loaded
        // 2-core CI machine a channel's second track took longer than 5 s to be reached.
        let deadline = Date().addingTimeInterval(TestTiming.seconds(30))
        while Date() < deadline {
            if server.log.contains(text) { return true }
            usleep(50_000)
        }
        return server.log.contains(text)
    }

    @Test func badBitrate_isAUsageError() throws {
        let library = try Self.makeLibrary([Self.tracks[0]])
        defer { try? FileManager.default.removeItem(at: library) }
        let streamd = TestPaths.streamd
        let bad = try runCommand(streamd, [library.path, "--port", "0", "--channel", "x=mix,bitrate=1000"], timeout: 30)
        #expect(bad.status != 0)
        #expect(String(decoding: bad.stderr, as: UTF8.self).contains("bitrate takes kbit/s from 8 to 320"))
    }
}
