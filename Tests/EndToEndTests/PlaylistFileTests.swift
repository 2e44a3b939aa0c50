import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The playlist files of the music folder on the real streamd: `/api/playlists` and the
/// rewritten `/playlist/file/...` M3U (absolute /media/ URLs from the Host header, entries outside
/// the folder or missing dropped with a warning).
@Suite(.ownThreads) struct PlaylistFileTests {
    /// The generated library plus playlists of every kind, good and bad entries mixed.
    static func makeLibrary() throws -> URL {
        let library = try ServerEndToEndTests.makeLibrary()
        let lists = library.appendingPathComponent("lists")
        try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
        let good = """
        #EXTM3U
        #PLAYLIST:Mixed bag
        #EXTINF:34,My own title
        ../cbr-128k-44k.mp3
        \(library.path)/pcm16.wav
        ../../../../etc/passwd
        missing.mp3
        http://example.com/remote.mp3
        file://\(library.path)/Album%20%C3%9Cn%C3%AFcode/01%20%C3%87a%20va%20%E2%80%94%20chanson.mp3
        ../.hidden.mp3
        ../escape.mp3

        """
        try Data(good.utf8).write(to: lists.appendingPathComponent("good.m3u8"))
        // Windows: CRLF, backslashes, Windows-1252 text (é = E9), a drive path.
        var windows = Data("#EXTM3U\r\n#EXTINF:52,Caf".utf8) + Data([0xE9]) + Data("\r\n..\\track.m4a\r\n".utf8)
        windows += Data("C:\\Music\\x.mp3\r\n".utf8)
        try windows.write(to: lists.appendingPathComponent("windows.m3u"))
        try Data("[playlist]\nFile1=vbr-v2.mp3\nTitle1=Spoken\nLength1=-1\nFile2=nope.mp3\nNumberOfEntries=2\n".utf8)
            .write(to: library.appendingPathComponent("radio.pls"))
        try Data("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg.mp3\n#EXT-X-ENDLIST\n".utf8)
            .write(to: library.appendingPathComponent("hls.m3u8"))
        let hidden = library.appendingPathComponent(".secret")
        try FileManager.default.createDirectory(at: hidden, withIntermediateDirectories: true)
        try Data("../pcm16.wav\n".utf8).write(to: hidden.appendingPathComponent("hidden.m3u"))
        try Data("x".utf8).write(to: library.appendingPathComponent(".hidden.mp3"))
        return library
    }

    static func get(_ server: StreamdProcess, _ target: String, host: String? = nil,
                    headers: [String: String] = [:]) throws -> RawResponse {
        let connection = try RawConnection(port: server.port)
        var text = "GET \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(server.port)")\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        try connection.sendAll(text + "\r\n")
        return try connection.readResponse()
    }

    static func json(_ response: RawResponse) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]])
    }

    @Test func listsThePlaylistFiles() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let response = try Self.get(server, "/api/playlists")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.header("Cache-Control") == "no-cache")
        let list = try Self.json(response)
        // The HLS playlist and the hidden folder's are not track lists of the library.
        #expect(list.map { $0["path"] as? String } == ["lists/good.m3u8", "lists/windows.m3u", "radio.pls"])
        let byPath = Dictionary(uniqueKeysWithValues: list.map { ($0["path"] as? String ?? "", $0) })
        #expect(byPath["lists/good.m3u8"]?["entries"] as? Int == 3)
        #expect(byPath["lists/good.m3u8"]?["dropped"] as? Int == 5)
        #expect(byPath["lists/good.m3u8"]?["title"] as? String == "Mixed bag")
        #expect(byPath["lists/good.m3u8"]?["format"] as? String == "extended-m3u")
        #expect(byPath["lists/good.m3u8"]?["url"] as? String == "/playlist/file/lists/good.m3u8")
        #expect(byPath["lists/windows.m3u"]?["url"] as? String == "/playlist/file/lists/windows.m3u.m3u8")
        #expect(byPath["lists/windows.m3u"]?["entries"] as? Int == 1)
        #expect(byPath["radio.pls"]?["format"] as? String == "pls")
        #expect(byPath["radio.pls"]?["entries"] as? Int == 1)
        #expect(byPath["radio.pls"]?["dropped"] as? Int == 1)
        // Each dropped entry is named once in the log, with the reason; the HLS one says what it is.
        let deadline = Date().addingTimeInterval(TestTiming.seconds(5))
        while !server.log.contains("nope.mp3"), Date() < deadline { usleep(50_000) }
        let log = server.log
        #expect(log.contains("playlist lists/good.m3u8: entry 3 '../../../../etc/passwd' dropped: outside the music folder"), "\(log)")
        #expect(log.contains("entry 4 'missing.mp3' dropped: no such file"), "\(log)")
        #expect(log.contains("entry 5 'http://example.com/remote.mp3' dropped: not a file of the music folder (a URL)"), "\(log)")
        #expect(log.contains("entry 7 '../.hidden.mp3' dropped: a hidden file"), "\(log)")
        #expect(log.contains("entry 8 '../escape.mp3' dropped: outside the music folder"), "\(log)")
        #expect(log.contains("playlist lists/windows.m3u: entry 2 'C:\\Music\\x.mp3' dropped: Windows path"), "\(log)")
        #expect(log.contains("playlist hls.m3u8: not listed: playlist: an HLS playlist (#EXT-X-TARGETDURATION)"), "\(log)")
        // Listed again: the files did not change, nothing is logged twice.
        _ = try Self.get(server, "/api/playlists")
        #expect(server.log.components(separatedBy: "'missing.mp3' dropped").count == 2, "\(server.log)")
    }

    @Test func servesAPlaylistRewrittenToLibraryURLs() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let base = "http://127.0.0.1:\(server.port)"
        let response = try Self.get(server, "/playlist/file/lists/good.m3u8")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "audio/x-mpegurl; charset=utf-8")
        #expect(response.header("Cache-Control") == "no-cache")
        let text = String(decoding: response.body, as: UTF8.self)
        #expect(text == """
        #EXTM3U
        #PLAYLIST:Mixed bag
        #EXTINF:34,My own title
        \(base)/media/cbr-128k-44k.mp3
        #EXTINF:21,streamd test band - Counting over Chords
        \(base)/media/pcm16.wav
        #EXTINF:25,Bände & Chœur - Ça va — chanson
        \(base)/media/Album%20%C3%9Cn%C3%AFcode/01%20%C3%87a%20va%20%E2%80%94%20chanson.mp3

        """)
        // Every URL it lists is served.
        for line in text.split(separator: "\n") where line.hasPrefix("http") {
            let media = try Self.get(server, String(line.dropFirst(base.count)))
            #expect(media.status == 200, "\(line)")
        }
        // Revalidation: 304 while the playlist is unchanged.
        let etag = try #require(response.header("ETag"))
        let again = try Self.get(server, "/playlist/file/lists/good.m3u8", headers: ["If-None-Match": etag])
        #expect(again.status == 304)
    }

    @Test func legacyFormatsAreServedAsM3U8_andTheHostHeaderBuildsTheURLs() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let windows = try Self.get(server, "/playlist/file/lists/windows.m3u.m3u8", host: "music.example:8080")
        #expect(windows.status == 200)
        #expect(String(decoding: windows.body, as: UTF8.self) == "#EXTM3U\n#EXTINF:52,Café\nhttp://music.example:8080/media/track.m4a\n")
        let pls = try Self.get(server, "/playlist/file/radio.pls.m3u8")
        let plsText = String(decoding: pls.body, as: UTF8.self)
        #expect(plsText.contains("#EXTINF:"), "\(plsText)")
        #expect(plsText.hasSuffix(",Spoken\nhttp://127.0.0.1:\(server.port)/media/vbr-v2.mp3\n"), "\(plsText)")
        // The file's own name works too (a .m3u is M3U already).
        #expect(try Self.get(server, "/playlist/file/lists/windows.m3u").status == 200)
    }

    @Test func refusals() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        #expect(try Self.get(server, "/playlist/file/lists/none.m3u8").status == 404)
        #expect(try Self.get(server, "/playlist/file/.secret/hidden.m3u").status == 404)
        #expect(try Self.get(server, "/playlist/file/cbr-128k-44k.mp3").status == 404)
        #expect(try Self.get(server, "/playlist/file/lists/../radio.pls").status == 400)
        #expect(try Self.get(server, "/playlist/file/%ZZ.m3u").status == 400)
        let hls = try Self.get(server, "/playlist/file/hls.m3u8")
        #expect(hls.status == 422)
        #expect(String(decoding: hls.body, as: UTF8.self).contains("an HLS playlist"))
    }
}
