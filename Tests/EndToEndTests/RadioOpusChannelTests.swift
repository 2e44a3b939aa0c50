import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// `--channel NAME=PATH,format=opus` on the real streamd: every track (FLAC here, one at
/// 44.1 kHz, one at 48 kHz) is decoded, resampled and encoded once for the channel to a link of
/// one chained Ogg Opus stream, with the track's title and artist in the link's OpusTags.
/// A listener starts on the current link's OpusHead and OpusTags, also when it joins mid-track;
/// every link heard whole decodes (opusdec) to exactly its track's length at 48 kHz and to its
/// tone, so a track change neither drops nor adds a sample; two listeners get the same pages of
/// the one encode; ffmpeg, mpv, GStreamer and streamplay decode the stream, and the titles they
/// (and /api/channels) report follow the tracks. Listeners stop by what they have read, never
/// by the clock.
@Suite(.ownThreads) struct RadioOpusChannelTests {
    /// The channel's tracks: file, title, tone, rate, seconds.
    static let tracks: [(file: String, title: String, hz: Double, rate: Int, seconds: Double)] = [
        ("01 alpha.flac", "Alpha Song", 440, 44_100, 1.5),
        ("02 beta.flac", "Beta Song", 660, 48_000, 2.0),
    ]
    static let artist = "Opus Artist"
    /// 64 kbit/s (8,000 bytes a second) with a 64 KiB burst: a listener gets about 8 s at once.
    static let arguments = ["--quiet", "--channel", "op=op,format=opus,bitrate=64"]

    /// A library with the channel folder `op`.
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-opusch-\(getpid())-\(UUID().uuidString.prefix(8))")
        let folder = dir.appendingPathComponent("op")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let ffmpeg = try #require(which("ffmpeg"))
        for track in tracks {
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi",
                                               "-i", "sine=frequency=\(Int(track.hz)):sample_rate=\(track.rate):duration=\(track.seconds)",
                                               "-ac", "2", "-c:a", "flac", "-metadata", "title=\(track.title)",
                                               "-metadata", "artist=\(artist)", folder.appendingPathComponent(track.file).path])
            guard made.status == 0 else { throw TestFailure("ffmpeg \(track.file): \(String(decoding: made.stderr, as: UTF8.self))") }
        }
        return dir
    }

    /// A track's length at 48 kHz: what its whole link decodes to.
    static func frames48k(_ track: (file: String, title: String, hz: Double, rate: Int, seconds: Double)) -> Int {
        Int((track.seconds * 48_000).rounded())
    }

    /// One complete Ogg page of a heard stream.
    struct Page {
        var serial: UInt32
        var granule: Int64
        var flags: UInt8
        var bytes: ArraySlice<UInt8>
        var isFirst: Bool { flags & 0x02 != 0 }
        var isLast: Bool { flags & 0x04 != 0 }
        /// The page's body (its packets' bytes).
        var body: ArraySlice<UInt8> { bytes.dropFirst(27 + Int(bytes[bytes.startIndex + 26])) }
    }

    /// The complete pages at the start of `bytes`, walked by their lengths.
    static func pages(_ bytes: [UInt8]) -> [Page] {
        var pages: [Page] = []
        var at = 0
        while at + 27 <= bytes.count, bytes[at..<(at + 4)].elementsEqual("OggS".utf8) {
            let segments = Int(bytes[at + 26])
            guard at + 27 + segments <= bytes.count else { break }
            let length = 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            guard at + length <= bytes.count else { break }
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + 6 + $1]) << (8 * UInt64($1)) }
            let serial = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + 14 + $1]) << (8 * UInt32($1)) }
            pages.append(Page(serial: serial, granule: Int64(bitPattern: granule), flags: bytes[at + 5], bytes: bytes[at..<(at + length)]))
            at += length
        }
        return pages
    }

    /// The pages in runs of one link each (a BOS page starts one).
    static func links(_ pages: [Page]) -> [[Page]] {
        var links: [[Page]] = []
        for page in pages {
            if page.isFirst || links.isEmpty { links.append([]) }
            links[links.count - 1].append(page)
        }
        return links
    }

    /// A raw HTTP/1.0 listener (close-delimited: the body is the stream as it is), connected now.
    final class Listener {
        let socket: RawConnection
        private var received: [UInt8] = []
        private(set) var head = ""
        private(set) var stream: [UInt8] = []

        init(port: Int, path: String = "/radio/op") throws {
            socket = try RawConnection(port: port)
            socket.send("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        }

        /// Reads until `enough` says the pages so far are enough (at most 60 s: a server that
        /// stops sending fails the test rather than hanging it); returns them.
        @discardableResult
        func read(until enough: ([Page]) -> Bool) throws -> [Page] {
            let deadline = Date().addingTimeInterval(60)
            while true {
                let pages = RadioOpusChannelTests.pages(stream)
                if enough(pages) { return pages }
                guard Date() < deadline else { throw TestFailure("the listener got \(stream.count) bytes, \(pages.count) pages, not enough") }
                let (bytes, end) = socket.readUntilEnd(quiet: 0.2, limit: 0.2)
                received += bytes
                if head.isEmpty, let split = received.firstRange(of: Array("\r\n\r\n".utf8)) {
                    head = String(decoding: received[..<split.lowerBound], as: UTF8.self)
                    received.removeSubrange(..<split.upperBound)
                }
                if !head.isEmpty {
                    stream += received
                    received.removeAll()
                }
                if end != .open && bytes.isEmpty { throw TestFailure("the stream ended after \(stream.count) bytes: \(head)") }
            }
        }
    }

    /// opusdec's 48 kHz float decode of `bytes` (interleaved stereo).
    /// Frames a decoder that joined mid-stream needs to converge (RFC 7845 4.6: 80 ms at 48 kHz).
    static let joinPreRoll = 3_840

    static func opusdec(_ bytes: some Collection<UInt8>, named name: String, in dir: URL) throws -> [Float] {
        let file = dir.appendingPathComponent("\(name).opus"), wav = dir.appendingPathComponent("\(name).wav")
        try Data(bytes).write(to: file)
        let decoder = try #require(which("opusdec"))
        let run = try runCommand(decoder, ["--quiet", "--rate", "48000", "--float", file.path, wav.path])
        guard run.status == 0 else { throw TestFailure("opusdec \(name): \(String(decoding: run.stderr, as: UTF8.self))") }
        return try PCMFile(path: wav.path).samples()
    }

    /// Signal-to-noise ratio (dB) of the left channel of `stereo` (48 kHz) against the
    /// best-fitting sine of `hz`, over whole 100 ms blocks (whole cycles of both tones, so the
    /// projection is the least-squares fit): how much of the decode is the track's tone.
    static func toneSNR(_ stereo: ArraySlice<Float>, hz: Double) -> Double {
        let block = 4_800
        var signal = 0.0, noise = 0.0
        var start = stereo.startIndex
        while start + 2 * block <= stereo.endIndex {
            var c = 0.0, s = 0.0
            for k in 0..<block {
                let phase = 2 * Double.pi * hz * Double(k) / 48_000
                c += Double(stereo[start + 2 * k]) * cos(phase)
                s += Double(stereo[start + 2 * k]) * sin(phase)
            }
            c *= 2 / Double(block)
            s *= 2 / Double(block)
            for k in 0..<block {
                let phase = 2 * Double.pi * hz * Double(k) / 48_000
                let fit = c * cos(phase) + s * sin(phase), x = Double(stereo[start + 2 * k])
                signal += fit * fit
                noise += (x - fit) * (x - fit)
            }
            start += 2 * block
        }
        return noise == 0 ? .infinity : 10 * log10(signal / max(noise, 1e-30))
    }

    /// The 100 ms blocks of a client's continuous 48 kHz stereo decode that are neither track's
    /// tone (at least 20 dB over the rest), and the blocks in all. A block across a track change
    /// holds both tones, so a stream of n changes has up to n such blocks (and the first block
    /// the decoder's start); a gap or garbage has more.
    static func foreignBlocks(_ stereo: [Float]) -> (foreign: Int, blocks: Int) {
        let block = 2 * 4_800
        var foreign = 0, blocks = 0
        var start = 0
        while start + block <= stereo.count {
            let slice = stereo[start..<(start + block)]
            if tracks.allSatisfy({ toneSNR(slice, hz: $0.hz) < 20 }) { foreign += 1 }
            blocks += 1
            start += block
        }
        return (foreign, blocks)
    }

    /// The blocks across a change of track that `blocks` 100 ms blocks may hold (tracks of at
    /// least 1.5 s), and the decoder's first.
    static func changesBound(_ blocks: Int) -> Int { blocks / 15 + 2 }

    /// The channel's entry in /api/channels.
    static func channel(_ server: StreamdProcess) throws -> [String: Any] {
        try RadioSourceTests.channels(server)["op"] ?? [:]
    }

    @Test(.timeLimit(.scaledMinutes(3)))
    func opusChannel_linksDecodeToTheirTracks_withoutGaps_titled_oneEncodeForTwoListeners() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: Self.arguments + ["--burst-kb", "128"])
        defer { server.stop() }
        // The start-up burst: the channel publishes its first 128 KiB (about 15 s of stream at
        // 64 kbit/s with the pages' overhead) as fast as they are encoded, as a playlist channel
        // does, rather than in real time. So once they are out, the stream is seconds ahead of the
        // channel's age (Icecast's stream_start, whole seconds, so the age is never short), where
        // without the burst it would be even with it. Counting the stream's seconds at 9,000
        // bytes a second (more than the channel sends) undercounts them: the lead is a floor.
        _ = try TestTiming.waitUntil(timeout: 60) { (try Self.channel(server)["stream_bytes"] as? Int ?? 0) >= 128 * 1024 }
        let icestats = try #require(try JSONSerialization.jsonObject(with: Data(try RawConnection(port: server.port)
            .request("GET", "/status-json.xsl").body)) as? [String: Any])["icestats"] as? [String: Any]
        let source = try #require((icestats?["source"] as? [[String: Any]])?.first)
        let started = DateFormatter()
        started.locale = Locale(identifier: "en_US_POSIX")
        started.dateFormat = "yyyy-MM-dd'T'HH:mm:ssZ"
        let start = try #require(started.date(from: source["stream_start_iso8601"] as? String ?? ""), "\(source)")
        let published = try Self.channel(server)["stream_bytes"] as? Int ?? 0
        let lead = Double(published) / 9_000 - Date().timeIntervalSince(start)
        #expect(TestTiming.scale > 1 || lead > 3, "the stream leads the channel's age by \(lead) s: no start-up burst")

        // The titles /api/channels shows while the listeners listen.
        let seen = RadioOggPlaylistTests.TitleLog()
        let port = server.port
        let watcher = Thread {
            while seen.watching {
                let body = (try? RawConnection(port: port).request("GET", "/api/channels").body) ?? []
                let list = (try? JSONSerialization.jsonObject(with: Data(body))) as? [[String: Any]] ?? []
                if let title = list.first(where: { $0["name"] as? String == "op" })?["now_playing"] as? String { seen.add(title) }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        watcher.start()
        defer { seen.stop() }

        // Two listeners at once; the first reads until it has heard four links begin (so at
        // least two whole ones), the second as many pages.
        let first = try Listener(port: server.port), second = try Listener(port: server.port)
        let pages = try first.read { pages in pages.filter(\.isFirst).count >= 4 }
        let workers = AnalyzerIsolationTests.children(of: server.process.processIdentifier).filter { child in
            ((try? String(contentsOfFile: "/proc/\(child)/cmdline", encoding: .utf8)) ?? "").contains("decode-worker")
        }
        let secondPages = try second.read { $0.count >= pages.count }
        let counted = try Self.channel(server)
        #expect(workers.count <= 1, "one decode for the channel, not one per listener: \(workers.count) workers")
        #expect(first.head.hasPrefix("HTTP/1.0 200") || first.head.hasPrefix("HTTP/1.1 200"), "\(first.head)")
        #expect(RadioEndToEndTests.header("Content-Type", in: first.head) == "audio/ogg")

        // Both start on a link's OpusHead then OpusTags: a decoder can start there.
        for (name, heard) in [("first", pages), ("second", secondPages)] {
            #expect(heard.count > 2 && heard[0].isFirst && heard[0].body.starts(with: "OpusHead".utf8)
                    && heard[1].body.starts(with: "OpusTags".utf8), "\(name) listener starts on a link's headers")
        }
        // One encode: the pages both heard are the same bytes (two encodes would differ in every page).
        var byKey: [String: ArraySlice<UInt8>] = [:]
        for page in pages { byKey["\(page.serial)/\(page.granule)/\(page.flags)"] = page.bytes }
        let shared = secondPages.filter { byKey["\($0.serial)/\($0.granule)/\($0.flags)"] != nil }
        #expect(shared.count >= pages.count / 2, "\(shared.count) of \(secondPages.count) pages heard by both")
        #expect(shared.allSatisfy { byKey["\($0.serial)/\($0.granule)/\($0.flags)"] == $0.bytes }, "the shared pages are byte-identical")

        let links = Self.links(pages)
        try #require(links.count >= 4, "\(links.count) links")
        for (a, b) in zip(links, links.dropFirst()) { #expect(a[0].serial != b[0].serial, "consecutive links have distinct serials") }
        var decodedSum = 0
        var wholeLinks = 0
        var report: [String] = []
        for (index, link) in links.enumerated() where link.last?.isLast == true {
            try #require(link.count > 2 && link[0].body.starts(with: "OpusHead".utf8) && link[1].body.starts(with: "OpusTags".utf8),
                         "link \(index) starts with its headers")
            // The track this link is: its OpusTags name it.
            let tags = link[1].body
            let track = try #require(Self.tracks.first { tags.firstRange(of: Array("TITLE=\($0.title)".utf8)) != nil },
                                     "link \(index)'s OpusTags name a track: \(String(decoding: tags, as: UTF8.self))")
            #expect(tags.firstRange(of: Array("ARTIST=\(Self.artist)".utf8)) != nil, "link \(index) names the artist")
            let bytes = link.reduce(into: [UInt8]()) { $0 += $1.bytes }
            let decoded = try Self.opusdec(bytes, named: "link\(index)", in: library)
            let frames = decoded.count / 2
            decodedSum += frames
            let snr = Self.toneSNR(decoded[...], hz: track.hz)
            report.append("\(track.title): \(frames) frames, \(String(format: "%.1f", snr)) dB")
            // Whole links (the first one heard from a join on is checked below).
            if index > 0 {
                wholeLinks += 1
                #expect(frames == Self.frames48k(track), "link \(index) (\(track.title)): \(frames) frames, the track has \(Self.frames48k(track))")
                #expect(snr > 20, "link \(index) (\(track.title)) against its tone: \(snr) dB")
                if index == 1 {
                    // What a player reads of a link: ffprobe's tags.
                    let file = library.appendingPathComponent("link\(index).opus")
                    let probe = try runCommand(try #require(which("ffprobe")),
                                               ["-v", "error", "-show_entries", "stream_tags=title,artist", "-of", "default=nw=1", file.path])
                    let text = String(decoding: probe.stdout, as: UTF8.self).lowercased()
                    #expect(text.contains("tag:title=\(track.title.lowercased())") && text.contains("tag:artist=\(Self.artist.lowercased())"),
                            "ffprobe: \(text)")
                }
            } else {
                // The link joined: the rest of its track from its first audio page on.
                let firstAudio = try #require(link.dropFirst(2).first, "link 0 has audio pages")
                let pageFrames = Int(firstAudio.granule) - 312
                #expect(frames <= Self.frames48k(track) && frames >= Self.frames48k(track) - pageFrames - 960,
                        "joined link: \(frames) frames, its first page ends at granule \(firstAudio.granule)")
                // A decoder that starts mid-stream is cold: RFC 7845 (4.6) gives it 80 ms of pre-roll
                // to converge (a join on a track's last 200 ms page once decoded 243 quiet frames
                // first). Its tone is judged after that, when at least 100 ms are left.
                let settled = decoded.dropFirst(2 * Self.joinPreRoll)
                #expect(settled.count < 2 * 4_800 || Self.toneSNR(settled, hz: track.hz) > 20,
                        "joined link against its tone, after the pre-roll: \(Self.toneSNR(settled, hz: track.hz)) dB")
            }
        }
        #expect(wholeLinks >= 2, "whole links heard: \(wholeLinks)")
        print("radio opus: the start-up burst puts the stream \(String(format: "%.1f", lead)) s ahead of the channel's age; links heard \(report)")

        // The stream heard, decoded as one chain: the links' sum (opusdec rounds a lone link's
        // end up to 3 samples past its granule), without a silent sample run at any join.
        let complete = links.prefix { $0.last?.isLast == true }.reduce(into: [UInt8]()) { all, link in
            for page in link { all += page.bytes }
        }
        let chain = try Self.opusdec(complete, named: "chain", in: library)
        let lost = decodedSum - chain.count / 2
        #expect(lost >= 0 && lost <= 3 * (links.count - 1), "chain \(chain.count / 2) frames, links \(decodedSum)")
        var longestQuiet = 0, quiet = 0
        // The chain starts with the joined link (link 0): its cold decoder's pre-roll is left out.
        for frame in min(Self.joinPreRoll, chain.count / 2)..<(chain.count / 2) {
            quiet = abs(chain[2 * frame]) < 1e-3 ? quiet + 1 : 0
            longestQuiet = max(longestQuiet, quiet)
        }
        #expect(longestQuiet < 24, "a silent run of \(longestQuiet) frames in the chain")

        // The titles followed the links; the status documents say what the channel is.
        let titled = try TestTiming.waitUntil(timeout: 10) {
            let titles = seen.titles
            return Self.tracks.allSatisfy { titles.contains("\(Self.artist) - \($0.title)") }
        }
        #expect(titled, "\(seen.titles)")
        let entry = try Self.channel(server)
        #expect(entry["codec"] as? String == "opus" && entry["content_type"] as? String == "audio/ogg"
                && entry["sample_rate"] as? Int == 48_000 && entry["channels"] as? Int == 2 && entry["bitrate_kbps"] as? Int == 64,
                "\(entry)")
        #expect(entry["source_connected"] as? Bool == false, "a playlist channel has no source: \(entry)")
        // Tracks encoded: at least the links heard, at most what the stream so far holds (a
        // track is at least 12 KB here) and what the feeder may run ahead (its 64 KiB feed, the
        // producer's 2 s, the track under way).
        let encoded = counted["tracks_encoded"] as? Int ?? 0, streamBytes = counted["stream_bytes"] as? Int ?? 0
        #expect(encoded >= links.count && encoded <= (streamBytes + 96 * 1024) / 12_000 + 2,
                "tracks encoded: \(encoded) for \(links.count) links heard and \(streamBytes) bytes of stream")
        let status = String(decoding: try RawConnection(port: server.port).request("GET", "/status-json.xsl").body, as: UTF8.self)
        #expect(status.contains("\"subtype\":\"Opus\"") && status.contains("\"server_type\":\"audio/ogg\""), "\(status)")
    }

    /// A decoder worker that crashes part way through a track (a fault drill) ends that track's
    /// link with what was encoded (finished, so the chain stays valid), the file is skipped from
    /// then on, and the channel and streamd go on.
    @Test(.timeLimit(.scaledMinutes(3)))
    func crashingDecoder_endsItsLink_andTheChannelGoesOn() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: Self.arguments + ["--burst-kb", "128"],
                                        decoderFault: "trap:02 beta.flac")
        defer { server.stop() }
        #expect(RadioTranscodeTests.logShows("02 beta.flac cut short: ", server) && server.log.contains("decoder crashed"),
                "\(server.log)")
        #expect(RadioTranscodeTests.logShows("02 beta.flac: skipped: its decoder crashed or stalled on it before", server), "\(server.log)")
        let listener = try Listener(port: server.port)
        // Six link starts: the 128 KiB burst may begin before the crash, so the crashed link and
        // a partial one can come first (under load only two whole links followed, one of them
        // the crashed one); after the skip only Alpha plays.
        let pages = try listener.read { pages in pages.filter(\.isFirst).count >= 6 }
        let links = Self.links(pages)
        let complete = links.dropFirst().prefix { $0.last?.isLast == true }
        try #require(complete.count >= 2, "\(links.count) links heard")
        var alpha = 0
        for (index, link) in complete.enumerated() {
            let decoded = try Self.opusdec(link.reduce(into: [UInt8]()) { $0 += $1.bytes }, named: "crash\(index)", in: library)
            if link[1].body.firstRange(of: Array("TITLE=Alpha Song".utf8)) != nil {
                alpha += 1
                #expect(decoded.count / 2 == 72_000, "link \(index) (Alpha Song): \(decoded.count / 2) frames")
            } else {
                // The crashing track's link: only what came before the crash, ended properly.
                #expect(decoded.count / 2 < 48_000, "link \(index) (Beta Song, crashed): \(decoded.count / 2) frames")
            }
        }
        #expect(alpha >= 2, "the channel goes on with the good track: \(alpha) whole links of it")
        // The heard stream decodes as one chain without complaint.
        _ = try Self.opusdec(complete.joined().reduce(into: [UInt8]()) { $0 += $1.bytes }, named: "crashchain", in: library)
        #expect(server.process.isRunning, "streamd is still running")
    }

    /// A listener that joins mid-track starts on that link's headers and decodes from there.
    @Test(.timeLimit(.scaledMinutes(2)))
    func joinerMidTrack_startsOnTheLinksHeaders() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // A small burst: a join lands within a link (its first pages are the link's headers, sent first).
        let server = try StreamdProcess(folder: library, extraArguments: Self.arguments + ["--burst-kb", "3"])
        defer { server.stop() }
        var joinedMidTrack = 0
        for attempt in 0..<8 where joinedMidTrack < 2 {
            let listener = try Listener(port: server.port)
            // The headers, and three audio pages after them.
            let pages = try listener.read { $0.count >= 5 }
            #expect(pages[0].isFirst && pages[0].body.starts(with: "OpusHead".utf8) && pages[1].body.starts(with: "OpusTags".utf8),
                    "attempt \(attempt): the headers first")
            // Mid-track: the first audio page is not the link's first (its granule is past one page).
            guard !pages[2].isFirst, pages[2].serial == pages[0].serial, pages[2].granule > 312 + 9_600 else { continue }
            joinedMidTrack += 1
            let heard = Array(pages.prefix(5).filter { $0.serial == pages[0].serial }.map(\.bytes).joined())
            let decoded = try Self.opusdec(heard, named: "join\(attempt)", in: library)
            let tags = pages[1].body
            let track = try #require(Self.tracks.first { tags.firstRange(of: Array("TITLE=\($0.title)".utf8)) != nil })
            let snr = Self.toneSNR(decoded[...], hz: track.hz)
            // The decoder settles within its first 20 ms frame of a stream started mid-link; from
            // the next 100 ms block on it is the track's tone.
            #expect(decoded.count / 2 >= 4_800, "attempt \(attempt): \(decoded.count / 2) frames decoded")
            #expect(Self.toneSNR(decoded.dropFirst(2 * 960)[...], hz: track.hz) > 15, "attempt \(attempt): joined mid-track, \(snr) dB")
        }
        #expect(joinedMidTrack >= 1, "no listener of 8 joined inside a link")
    }

    @Test(.timeLimit(.scaledMinutes(3)))
    func ffmpegMpvGStreamerAndStreamplay_hearTheTracksAndTheirTitles() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: Self.arguments)
        defer { server.stop() }
        let url = "\(server.baseURL)/radio/op"
        _ = try TestTiming.waitUntil(timeout: 30) { (try Self.channel(server)["stream_bytes"] as? Int ?? 0) >= 64 * 1024 }

        // ffmpeg: 5 s of decoded audio (it stops by what it decoded), across two or more track changes.
        let ffmpeg = try #require(which("ffmpeg"))
        let ffmpegWAV = library.appendingPathComponent("ffmpeg.wav")
        let decoded = try runCommand(ffmpeg, ["-nostdin", "-v", "error", "-y", "-i", url, "-t", "5", "-ar", "48000", "-ac", "2",
                                              "-c:a", "pcm_f32le", ffmpegWAV.path], timeout: 60)
        #expect(decoded.status == 0, "ffmpeg: \(String(decoding: decoded.stderr, as: UTF8.self))")
        let ffmpegPCM = try PCMFile(path: ffmpegWAV.path).samples()
        let ffmpegBlocks = Self.foreignBlocks(ffmpegPCM)
        // (ffmpeg's -t goes by timestamps, which it restarts at each link: within 1%.)
        #expect(abs(ffmpegPCM.count / 2 - 240_000) <= 2_400, "ffmpeg decoded \(ffmpegPCM.count / 2) frames")
        #expect(ffmpegBlocks.foreign <= Self.changesBound(ffmpegBlocks.blocks),
                "ffmpeg: \(ffmpegBlocks.foreign) of \(ffmpegBlocks.blocks) blocks are neither tone")

        // mpv: 4 s to a WAV, and the titles it shows as each link's tags come.
        let mpv = try #require(which("mpv"), "mpv is installed by scripts/deps.sh")
        let mpvWAV = library.appendingPathComponent("mpv.wav")
        let played = try runCommand(mpv, ["--no-config", "--no-video", "--ao=pcm", "--ao-pcm-file=\(mpvWAV.path)", "--audio-format=float",
                                          "--audio-samplerate=48000", "--audio-channels=stereo", "--length=4", "--msg-level=all=info",
                                          "--term-osd=no", url], timeout: 60)
        let mpvOutput = String(decoding: played.stdout + played.stderr, as: UTF8.self)
        #expect(played.status == 0, "mpv: \(mpvOutput)")
        let mpvPCM = try PCMFile(path: mpvWAV.path).samples()
        let mpvBlocks = Self.foreignBlocks(mpvPCM)
        #expect(mpvPCM.count / 2 >= 3 * 48_000, "mpv played \(mpvPCM.count / 2) frames")
        #expect(mpvBlocks.foreign <= Self.changesBound(mpvBlocks.blocks), "mpv: \(mpvBlocks.foreign) of \(mpvBlocks.blocks) blocks are neither tone")
        #expect(Self.tracks.allSatisfy { mpvOutput.contains($0.title) }, "mpv showed both titles: \(mpvOutput)")

        // GStreamer: its HTTP source reads the first 30 buffers of the stream (the burst is most
        // of them) into playbin, which follows the chain's links (gst-launch cannot relink a
        // decodebin's new pad at each link), with its tags.
        let gst = try #require(which("gst-launch-1.0"), "gst-launch-1.0 is installed by scripts/deps.sh")
        let gstWAV = library.appendingPathComponent("gst.wav")
        let sink = "audioconvert ! audioresample ! audio/x-raw,format=F32LE,rate=48000,channels=2 ! wavenc ! filesink location=\(gstWAV.path)"
        let gstRun = try runCommand("/bin/sh", ["-c", "'\(gst)' -q souphttpsrc location=\(url) num-buffers=30 blocksize=4096 ! fdsink fd=1 "
                                                + "| '\(gst)' -t playbin uri=fd://0 audio-sink='\(sink)'"], timeout: 60)
        let gstOutput = String(decoding: gstRun.stdout + gstRun.stderr, as: UTF8.self)
        #expect(gstRun.status == 0, "gst-launch: \(gstOutput.suffix(1500))")
        let gstPCM = try PCMFile(path: gstWAV.path).samples()
        let gstBlocks = Self.foreignBlocks(gstPCM)
        #expect(gstPCM.count / 2 >= 3 * 48_000, "GStreamer decoded \(gstPCM.count / 2) frames")
        #expect(gstBlocks.foreign <= Self.changesBound(gstBlocks.blocks), "GStreamer: \(gstBlocks.foreign) of \(gstBlocks.blocks) blocks are neither tone")
        #expect(Self.tracks.allSatisfy { gstOutput.contains($0.title) }, "GStreamer's tags name both tracks: \(gstOutput.suffix(1500))")

        // streamplay plays Ogg radio and reports each link's title (4 s: at least one change).
        let streamplay = try runCommand(PlayerTests.streamplay, [url, "--output", "null", "--duration", "4", "--stats"], timeout: 60)
        #expect(streamplay.status == 0, "\(String(decoding: streamplay.stderr, as: UTF8.self))")
        let stats = try PlayerTests.stats(streamplay.stdout)
        let titles = RadioPlayerTests.titles(stats)
        #expect(Self.tracks.allSatisfy { titles.contains("\(Self.artist) - \($0.title)") }, "streamplay's titles: \(titles)")
        print("radio opus: blocks neither tone: ffmpeg \(ffmpegBlocks), mpv \(mpvBlocks), GStreamer \(gstBlocks); streamplay titles \(titles)")
    }
}

