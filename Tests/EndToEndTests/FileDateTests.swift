import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Files whose dates are outside 1970-2262 (ext4 keeps 1901-2446) on the real streamd: a track
/// dated 1960 is listed and served, a playlist and its folder dated 2300 are listed, and the
/// server lives on.
/// Before, the first request for the 1960 file trapped in OpenFile (its negative seconds made
/// UInt64) and took the server down, its analyzer worker crashed on it the same way, and
/// /api/playlists trapped on the folder's date in nanoseconds (past 2262 they overflow 64 bits).
@Suite(.timeLimit(.scaledMinutes(2)), .ownThreads) struct FileDateTests {
    /// Sets the access and modification times of `url` to `seconds` since the epoch.
    static func setTime(_ url: URL, _ seconds: Int) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        guard utimensat(AT_FDCWD, url.path, &times, 0) == 0 else { throw TestFailure("utimensat \(url.path): errno \(errno)") }
    }

    @Test func filesDatedBefore1970OrAfter2262_areListedAndServed() throws {
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-dates-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: library) }
        let old = library.appendingPathComponent("old.mp3")
        try FileManager.default.copyItem(at: TestPaths.media.appendingPathComponent("cbr-no-tag.mp3"), to: old)
        let lists = library.appendingPathComponent("lists")
        try FileManager.default.createDirectory(at: lists, withIntermediateDirectories: true)
        let playlist = lists.appendingPathComponent("future.m3u")
        try Data("#EXTM3U\n../old.mp3\n".utf8).write(to: playlist)
        try Self.setTime(old, -315_619_200)           // 1960-01-01
        try Self.setTime(playlist, 10_413_792_000)    // 2300-01-01
        try Self.setTime(lists, 10_413_792_000)       // the folder too: the playlist walk stamps folders
        let server = try StreamdProcess(folder: library, extraArguments: ["--db", TestPaths.temporaryDatabase()])
        let tracks = try LibraryEndToEndTests.tracks(server)
        #expect(tracks["old.mp3"] != nil, "the 1960 file is analyzed and listed: \(server.log)")
        let media = try AnalyzerIsolationTests.get(server, "/media/old.mp3")
        let original = Array(try Data(contentsOf: old))
        #expect(media.status == 200 && media.body == original, "served whole")
        #expect(media.headers.first { $0.0.lowercased() == "last-modified" }?.1.contains("1960") == true, "\(media.headers)")
        let etag = media.headers.first { $0.0.lowercased() == "etag" }?.1
        #expect(etag != nil && etag == tracks["old.mp3"]?["etag"] as? String, "the API's tag is the one /media sends")
        let playlists = try AnalyzerIsolationTests.get(server, "/api/playlists")
        #expect(playlists.status == 200 && String(decoding: playlists.body, as: UTF8.self).contains("future.m3u"))
        #expect(try server.status()["tracks"] as? Int == 1, "the server is still up")
    }
}
