import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Real players (mpv, VLC) open streamd's playlists and play every entry in order.
enum PlaylistPlayers {
    /// The absolute URLs a served playlist lists, in order.
    static func urls(in playlist: RawResponse) -> [String] {
        String(decoding: playlist.body, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("http://") }.map(String.init)
    }

    /// Plays `url` in mpv (2 s of each entry, PCM output to a file, as fast as it decodes) and
    /// returns the URLs it played, in order, from its `--term-playing-msg` lines.
    static func mpv(_ url: String) throws -> (played: [String], output: String, status: Int32) {
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-mpv-\(getpid())-\(UUID().uuidString.prefix(6)).wav")
        defer { try? FileManager.default.removeItem(at: wav) }
        let result = try runCommand(try #require(which("mpv")),
                                    ["--no-config", "--no-video", "--vo=null", "--ao=pcm", "--ao-pcm-file=\(wav.path)",
                                     "--end=2", "--term-playing-msg=PLAYED ${path}", url], timeout: 120)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        let played = output.split(separator: "\n").filter { $0.hasPrefix("PLAYED ") }.map { String($0.dropFirst("PLAYED ".count)) }
        return (played, output, result.status)
    }

    /// Plays `url` in VLC (1 s of each entry, dummy audio output; as `nobody` when root, since
    /// VLC refuses to run as root) and returns the URLs it opened, in order, from its debug log.
    static func vlc(_ url: String) throws -> (played: [String], output: String) {
        let cvlc = try #require(which("cvlc"))
        let arguments = ["-I", "dummy", "--no-video", "--aout=dummy", "--play-and-exit", "--stop-time=1",
                         "--no-metadata-network-access", "-vv", url]
        let result = getuid() == 0
            ? try runCommand(try #require(which("runuser")), ["-u", "nobody", "--", cvlc] + arguments, timeout: 180)
            : try runCommand(cvlc, arguments, timeout: 180)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        // "main input debug: `http://…/media/x.mp3' gives access `http' demux `any' path `…'"
        let played = output.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("main input debug: `"), line.contains("' gives access"),
                  let start = line.range(of: "main input debug: `"), let end = line.range(of: "' gives access") else { return nil }
            return String(line[start.upperBound..<end.lowerBound])
        }
        return (played, output)
    }
}

@Suite(.ownThreads) struct PlaylistPlayerTests {
    static func library() throws -> URL {
        let library = try ServerEndToEndTests.makeLibrary()
        let lists = library.appendingPathComponent("lists")
        try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
        try Data("#EXTM3U\n../cbr-128k-44k.mp3\n../pcm16.wav\n../Album Ünïcode/01 Ça va — chanson.mp3\n../track.m4a\n".utf8)
            .write(to: lists.appendingPathComponent("mix.m3u"))
        return library
    }

    @Test(.timeLimit(.scaledMinutes(3))) func mpvPlaysAFolderPlaylist() throws {
        let library = try Self.library()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let url = "\(server.baseURL)/playlist/file/lists/mix.m3u.m3u8"
        let expected = PlaylistPlayers.urls(in: try PlaylistFileTests.get(server, "/playlist/file/lists/mix.m3u.m3u8"))
        #expect(expected.count == 4)
        let mpv = try PlaylistPlayers.mpv(url)
        #expect(mpv.status == 0, "\(mpv.output)")
        #expect(mpv.played == expected, "\(mpv.output)")
        #expect(mpv.output.contains("Exiting... (End of file)"), "\(mpv.output)")
    }

    /// The album playlist of the catalog: its four tracks in disc/track order, not path order.
    static func albumPlaylist(_ server: StreamdProcess) throws -> (url: String, expected: [String]) {
        let album = try LibraryAPITests.album(server, titled: "Ordered Album")
        let path = "/playlist/album/\(try #require(album["id"] as? Int)).m3u8"
        let expected = PlaylistPlayers.urls(in: try PlaylistFileTests.get(server, path))
        let folder = "\(server.baseURL)/media/Ordered%20Artist/Ordered%20Album"
        #expect(expected == ["c", "b", "a", "d"].map { "\(folder)/\($0).mp3" })
        return (server.baseURL + path, expected)
    }

    @Test(.timeLimit(.scaledMinutes(3))) func mpvPlaysAnAlbumPlaylist() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let (url, expected) = try Self.albumPlaylist(server)
        let mpv = try PlaylistPlayers.mpv(url)
        #expect(mpv.status == 0, "\(mpv.output)")
        #expect(mpv.played == expected, "\(mpv.output)")
        #expect(mpv.output.contains("Exiting... (End of file)"), "\(mpv.output)")
    }

    @Test(.timeLimit(.scaledMinutes(3))) func vlcPlaysAnAlbumPlaylist() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let (url, expected) = try Self.albumPlaylist(server)
        let vlc = try PlaylistPlayers.vlc(url)
        #expect(vlc.played == [url] + expected, "\(vlc.output.suffix(4000))")
        #expect(vlc.output.contains("end of playlist, exiting"), "\(vlc.output.suffix(2000))")
        #expect(!vlc.output.contains("http stream error"), "\(vlc.output.suffix(2000))")
        // Each track was fetched from streamd (its access log names the path) and decoded.
        for track in expected {
            let path = String(track.dropFirst(server.baseURL.count))
            #expect(server.log.contains("GET \(path) "), "\(path) in \(server.log.suffix(2000))")
        }
        #expect(vlc.output.components(separatedBy: "using audio decoder module").count - 1 >= expected.count,
                "\(vlc.output.suffix(3000))")
    }
}
