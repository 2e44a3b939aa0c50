import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import StreamShared

/// `--channel NAME=PATH,passthrough` over Ogg Opus (and Vorbis) files on the real streamd: the files go out
/// as one chained Ogg stream, each track a link with its own serial; a listener starts on the
/// current link's header pages; every link it heard whole decodes with opusdec/oggdec to exactly its
/// file's samples, the joined one to the rest of its file; the titles from the files' comments
/// change at the link boundary in /api/channels. A folder of Opus and Vorbis is refused.
@Suite(.ownThreads) struct RadioOggPlaylistTests {
    /// One page of the heard stream.
    struct Page {
        var serial: UInt32
        var granule: Int64
        var flags: UInt8
        var bytes: ArraySlice<UInt8>
    }

    @Test(.timeLimit(.scaledMinutes(2)), arguments: [true, false])
    func oggTracks_goOutAsChainedLinks_decodingToTheirSamples(opus: Bool) throws {
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-oggch-\(getpid())-\(UUID().uuidString.prefix(8))")
        let folder = library.appendingPathComponent("oggch")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: library) }
        let ffmpeg = try #require(which("ffmpeg")), decoder = try #require(which(opus ? "opusdec" : "oggdec"))
        let ext = opus ? "opus" : "ogg"
        let tracks = [("01 first.\(ext)", "First Track", 440, 2), ("02 second.\(ext)", "Second Track", 880, 3)]
        // Bytes per sample frame of the decoders' WAV: opusdec's 32-bit float, oggdec's 16-bit.
        let frameBytes = opus ? 8 : 4
        var reference: [String: Data] = [:]   // title → the reference decoder's decode of the file
        for (name, title, hz, seconds) in tracks {
            let file = folder.appendingPathComponent(name)
            let made = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=\(hz):duration=\(seconds)",
                                               "-ac", "2"] + (opus ? ["-c:a", "libopus", "-b:a", "64k"] : ["-ar", "44100", "-c:a", "libvorbis", "-q:a", "2"])
                                               + ["-page_duration", "200000"]
                                               // The Vorbis channel's second file is untagged: its title is the catalog's, from its name.
                                               + (opus || title == "First Track" ? ["-metadata", "title=\(title)", "-metadata", "artist=Ogg Artist"] : [])
                                               + [file.path])
            #expect(made.status == 0, "\(String(decoding: made.stderr, as: UTF8.self))")
            reference[title] = try Self.decode(decoder, file, in: library)
        }
        // Opus beside Vorbis: not one stream format.
        let mixed = library.appendingPathComponent("mixed")
        try FileManager.default.createDirectory(at: mixed, withIntermediateDirectories: true)
        _ = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=500:duration=1", "-ac", "2",
                                    "-c:a", "libopus", mixed.appendingPathComponent("a.opus").path])
        _ = try runCommand(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=500:duration=1", "-ac", "2",
                                    "-c:a", "libvorbis", mixed.appendingPathComponent("b.ogg").path])

        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--burst-kb", "4", "--channel", "og=oggch,passthrough"])
        defer { server.stop() }
        // The titles /api/channels shows while the listener listens.
        let seen = TitleLog()
        let port = server.port
        let watcher = Thread {
            while seen.watching {
                let body = (try? RawConnection(port: port).request("GET", "/api/channels").body) ?? []
                let list = (try? JSONSerialization.jsonObject(with: Data(body))) as? [[String: Any]] ?? []
                if let title = list.first(where: { $0["name"] as? String == "og" })?["now_playing"] as? String { seen.add(title) }
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        watcher.start()
        let (head, body) = try RadioEndToEndTests.listen(port: server.port, path: "/radio/og", seconds: 7.5)
        seen.stop()
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")
        #expect(RadioEndToEndTests.header("Content-Type", in: head) == "audio/ogg")
        let audio = try RadioEndToEndTests.dechunk(body)
        let pages = Self.pages(audio)
        try #require(pages.count > 10, "\(audio.count) bytes")
        let identification: [UInt8] = opus ? Array("OpusHead".utf8) : [1] + Array("vorbis".utf8)
        #expect(pages[0].flags & 0x02 != 0 && Array(audio[28..<(28 + identification.count)]) == identification,
                "the stream starts on a link's headers")
        // Links: runs of pages of one serial, each starting with a BOS page; consecutive serials differ.
        var links: [[Page]] = []
        for page in pages {
            if page.flags & 0x02 != 0 || links.isEmpty { links.append([]) }
            links[links.count - 1].append(page)
        }
        try #require(links.count >= 2, "\(links.count) links heard")
        for (a, b) in zip(links, links.dropFirst()) { #expect(a[0].serial != b[0].serial, "consecutive links have distinct serials") }
        for link in links {
            #expect(link.allSatisfy { $0.serial == link[0].serial }, "one serial per link")
            let granules = link.map(\.granule).filter { $0 >= 0 }
            #expect(granules == granules.sorted(), "granules run on within a link")
        }
        var decodedSum = 0
        var wholeLinks = 0
        for (index, link) in links.enumerated() {
            let bytes = link.reduce(into: [UInt8]()) { $0 += $1.bytes }
            let title = bytes.firstRange(of: Array("First Track".utf8)) != nil ? "First Track" : "Second Track"
            let file = library.appendingPathComponent("link\(index).\(ext)")
            try Data(bytes).write(to: file)
            let decoded = try Self.decode(decoder, file, in: library)
            let own = try #require(reference[title])
            let samples = (decoded.count - 44) / frameBytes, ownSamples = (own.count - 44) / frameBytes
            decodedSum += samples
            let ended = link.last.map { $0.flags & 0x04 != 0 } == true
            if ended && (index > 0 || decoded == own) {
                // Heard from its BOS page to its EOS page: the file's own samples, bit for bit.
                wholeLinks += 1
                #expect(decoded == own, "link \(index) (\(title)): \(samples) samples against the file's \(ownSamples)")
            } else if index == 0 {
                // Joined late: the rest of the file from the first audio page heard (at most one 200 ms page more).
                let firstAudio = try #require(link.first { $0.flags & 0x02 == 0 && $0.granule > 0 && !Self.isHeader($0) })
                let rest = ownSamples - Int(firstAudio.granule)
                #expect(samples >= rest - 400 && samples <= rest + 9_600 + 400 && samples <= ownSamples,
                        "joined link (\(title)): \(samples) samples, \(rest) after its first page heard")
            }
        }
        #expect(wholeLinks >= 1, "a link heard from start to end")
        // The whole stream decodes as a chain to the sum of its links.
        let chain = library.appendingPathComponent("heard.\(ext)")
        try Data(audio).write(to: chain)
        let all = try Self.decode(decoder, chain, in: library)
        // opusdec (0.2) ends a lone link 3 samples past its last granule (its own rounding), while in
        // a chain it cuts each link but the last at its granule: the chain is the links' sum less
        // those few samples at each of its joins, no more. oggdec's chain is the sum.
        let lost = decodedSum - (all.count - 44) / frameBytes
        #expect(lost >= 0 && lost <= (opus ? 3 : 0) * (links.count - 1), "chain \((all.count - 44) / frameBytes) samples, links \(decodedSum)")
        // The title changed at the link boundaries: both tracks' titles were the channel's.
        let titles = seen.titles
        #expect(titles.contains("Ogg Artist - First Track"), "\(titles)")
        if opus {
            #expect(titles.contains("Ogg Artist - Second Track"), "\(titles)")
        } else {
            #expect(titles.contains { $0.hasSuffix("second") }, "the untagged file's title from its name: \(titles)")
        }
        // A playlist channel, not a source: no source connected; the codec inside the Ogg named.
        let entry = try RadioSourceTests.channels(server)["og"] ?? [:]
        #expect(entry["source_connected"] as? Bool == false && entry["codec"] as? String == (opus ? "opus" : "vorbis")
                && entry["tracks_encoded"] as? Int == 0, "\(entry)")
        server.stop()

        // A folder of Opus and Vorbis with passthrough: one line, exit 1.
        guard opus else { return }
        let refused = try runCommand(TestPaths.streamd, [library.path, "--port", "0", "--quiet", "--channel", "mix=mixed,passthrough"],
                                     timeout: 30)
        let line = String(decoding: refused.stderr, as: UTF8.self)
        #expect(refused.status == 1, "\(line)")
        #expect(line.contains("passthrough needs tracks of one stream format") && line.contains("Vorbis")
                && line.split(separator: "\n").count == 1, "\(line)")
    }

    /// The distinct titles seen in a row, from the watcher thread.
    final class TitleLog: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [String] = []
        private var running = true
        var watching: Bool { lock.withLock { running } }
        var titles: [String] { lock.withLock { list } }
        func stop() { lock.withLock { running = false } }
        func add(_ title: String) { lock.withLock { if list.last != title { list.append(title) } } }
    }

    /// The reference decoder's WAV of `file`: opusdec's 48 kHz float, oggdec's 16-bit.
    static func decode(_ decoder: String, _ file: URL, in dir: URL) throws -> Data {
        let wav = dir.appendingPathComponent(file.lastPathComponent + ".wav")
        let arguments = decoder.hasSuffix("opusdec") ? ["--quiet", "--rate", "48000", "--float", file.path, wav.path]
                                                     : ["--quiet", "-o", wav.path, file.path]
        let result = try runCommand(decoder, arguments)
        guard result.status == 0 else { throw TestFailure("\(decoder) \(file.lastPathComponent): \(String(decoding: result.stderr, as: UTF8.self))") }
        return try Data(contentsOf: wav)
    }

    /// A page of a link's header packets (OpusHead, OpusTags; Vorbis' identification, comment and setup).
    static func isHeader(_ page: Page) -> Bool {
        let body = page.bytes.dropFirst(27 + Int(page.bytes[page.bytes.startIndex + 26]))
        guard let type = body.first else { return false }
        return body.starts(with: "OpusHead".utf8) || body.starts(with: "OpusTags".utf8)
            || ([1, 3, 5].contains(type) && body.dropFirst().starts(with: "vorbis".utf8)) || page.granule == 0
    }

    /// The pages of `bytes`, walked by their lengths.
    static func pages(_ bytes: [UInt8]) -> [Page] {
        RadioOggSourceTests.pageStarts(bytes).map { at in
            let segments = Int(bytes[at + 26])
            let length = 27 + segments + bytes[(at + 27)..<(at + 27 + segments)].reduce(0) { $0 + Int($1) }
            let granule = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + 6 + $1]) << (8 * UInt64($1)) }
            let serial = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + 14 + $1]) << (8 * UInt32($1)) }
            return Page(serial: serial, granule: Int64(bitPattern: granule), flags: bytes[at + 5], bytes: bytes[at..<(at + length)])
        }
    }
}
