#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// `/playlist/all.m3u8` written piece by piece: the same text `M3UWriter` makes of the whole
/// list, framed for HTTP/1.1 or 1.0, and a body that lets the event loop go between pieces.
@Suite struct LibraryPlaylistBodyTests {
    typealias Fixture = LibraryStoreTests

    static func store() throws -> LibraryStore {
        let store = try TrackJSONTests.awkwardStore()
        try store.apply([
            .track(path: "Solo/untitled.mp3", stamp: Fixture.stamp(20), analysis: Fixture.analysis(title: "", artist: "Solo")),
            .track(path: "Solo/trail.mp3", stamp: Fixture.stamp(21), analysis: Fixture.analysis(title: "Trail ", artist: " Lead")),
            .track(path: "Solo/long.mp3", stamp: Fixture.stamp(22), analysis: Fixture.analysis(title: "Long", duration: 9e9)),
        ])
        return store
    }

    /// What `PlaylistRoutes.m3u` makes of the rows.
    static func expected(_ rows: [Track], title: String, base: String) -> String {
        let entries = rows.map { row in
            PlaylistEntry(location: base + "/media/" + PathResolver.percentEncode(row.path), title: row.label,
                          duration: row.durationSeconds)
        }
        return M3UWriter.render(entries, title: title)
    }

    static func parts(_ body: LibraryPlaylistBody) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        while parts.count < 10_000, let part = body.nextPart() {
            guard case .bytes(let bytes) = part else { return parts }
            parts.append(bytes)
        }
        return parts
    }

    /// The payload of chunked framing; nil when the framing is wrong.
    static func unchunk(_ data: [UInt8]) -> [UInt8]? {
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            guard let lineEnd = data[i...].firstIndex(of: 0x0D), lineEnd + 1 < data.count, data[lineEnd + 1] == 0x0A,
                  let size = Int(String(decoding: data[i..<lineEnd], as: UTF8.self), radix: 16) else { return nil }
            let start = lineEnd + 2
            if size == 0 { return start + 2 == data.count && data[start...] == [0x0D, 0x0A] ? out : nil }
            guard start + size + 2 <= data.count, data[(start + size)..<(start + size + 2)] == [0x0D, 0x0A] else { return nil }
            out += data[start..<(start + size)]
            i = start + size + 2
        }
        return nil
    }

    @Test func pieces_makeTheWholePlaylist_asTheWriterDoes() throws {
        let store = try Self.store()
        let rows = try store.tracks.page(offset: 0, limit: 1000).rows
        #expect(rows.count == 12)
        for base in ["http://127.0.0.1:8080", "", "http://[::1]:80"] {
            let body = LibraryPlaylistBody(store: store, ids: rows.map(\.id), title: "All tracks", base: base, chunked: false)
            let text = String(decoding: Self.parts(body).joined(), as: UTF8.self)
            #expect(text == Self.expected(rows, title: "All tracks", base: base))
            #expect(body.yieldAfterBytes != nil)
        }
    }

    @Test func chunked_framesEveryPiece_andEnds() throws {
        let store = try Self.store()
        let rows = try store.tracks.page(offset: 0, limit: 1000).rows
        let reversed = Array(rows.reversed())
        let body = LibraryPlaylistBody(store: store, ids: reversed.map(\.id), title: "Back", base: "http://h", chunked: true)
        let payload = try #require(Self.unchunk(Array(Self.parts(body).joined())))
        #expect(String(decoding: payload, as: UTF8.self) == Self.expected(reversed, title: "Back", base: "http://h"))
        let empty = LibraryPlaylistBody(store: store, ids: [], title: "None", base: "", chunked: true)
        #expect(Self.unchunk(Array(Self.parts(empty).joined())) == Array("#EXTM3U\n#PLAYLIST:None\n".utf8))
    }

    @Test func manyTracks_comeInSeveralPieces_andRemovedOnesAreLeftOut() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply((0..<1500).map { n in
            .track(path: "A/\(n).mp3", stamp: Fixture.stamp(n), analysis: Fixture.analysis(title: "T\(n)", artist: "A"))
        })
        let ids = try store.tracks.ids(sort: .path)
        let body = LibraryPlaylistBody(store: store, ids: ids, title: "All", base: "", chunked: false)
        let first = try #require(body.nextPart())
        try store.apply([.removed(path: "A/999.mp3")])
        var parts = [first]
        while parts.count < 100, let part = body.nextPart() { parts.append(part) }
        #expect(parts.count >= 3, "1,500 entries in pieces of \(LibraryPlaylistBody.entriesPerPiece)")
        let text = parts.compactMap { part -> String? in
            if case .bytes(let bytes) = part { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }.joined()
        let rows = try store.tracks.page(offset: 0, limit: 2000).rows
        #expect(rows.count == 1499 && text == Self.expected(rows, title: "All", base: ""))
    }

    /// A body that asks to yield hands the loop back after that many bytes, its place kept.
    @Test func connection_yieldsAfterTheBodysBytes() throws {
        final class Pieces: ResponseBody, @unchecked Sendable {
            var left = 8
            func nextPart() -> BodyPart? {
                guard left > 0 else { return nil }
                left -= 1
                return .bytes([UInt8](repeating: 0x61, count: 1000))
            }
            var yieldAfterBytes: Int? { 2500 }
        }
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let connection = Connection(fd: fds[0], generation: 1, peer: "test")
        connection.outgoing = Connection.Outgoing(head: Array("HEAD\r\n".utf8), body: Pieces(), keepAlive: true, method: "GET",
                                                  target: "/", status: 200, started: 0)
        var outcomes: [String] = []
        for _ in 0..<10 {
            let outcome = try connection.write(now: 1)
            outcomes.append("\(outcome)")
            if case .finished = outcome { break }
        }
        #expect(outcomes == ["paced(1)", "paced(1)", "finished"], "\(outcomes)")
        var received = [UInt8](repeating: 0, count: 16_384)
        let n = recv(fds[1], &received, received.count, 0)
        #expect(n == 6 + 8000)
    }
}
