import Atomics
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio

/// An extended M3U of library tracks (`/playlist/all.m3u8`: 100,000 entries, 18 MB) written a
/// few hundred entries at a time as the client takes them, instead of built whole before the
/// first byte: the event loop goes on serving its other connections between pieces (the body
/// asks to yield), memory holds one piece, and the first entries leave at once. Chunked for
/// HTTP/1.1, delimited by the close for HTTP/1.0. Each piece reads its tracks by id from the
/// list fixed when the request came (a track removed meanwhile is left out).
final class LibraryPlaylistBody: ResponseBody, @unchecked Sendable {
    // @unchecked: used by one event-loop thread at a time.
    private let store: LibraryStore
    private let ids: [Int]
    /// The escaped `http://host` the `/media/` URLs start with.
    private let base: [UInt8]
    private let chunked: Bool
    private var header: [UInt8]?
    private var next = 0
    private var finished = false

    /// Entries written per piece (about 180 bytes each).
    static let entriesPerPiece = 512
    /// Bytes after which the loop serves other connections before the next piece.
    let yieldAfterBytes: Int? = 256 * 1024

    /// Signs each `/media/` link for the user the list is for (see `HTTPRequest.linkSigner`).
    private let signer: LinkSigner?

    init(store: LibraryStore, ids: [Int], title: String?, base: String, chunked: Bool, signer: LinkSigner? = nil) {
        self.signer = signer
        self.store = store
        self.ids = ids
        self.base = Array(M3UWriter.escapeLocation(base).utf8)
        self.chunked = chunked
        var head = "#EXTM3U\n"
        if let title, case let clean = M3UWriter.escapeTitle(title), !clean.isEmpty { head += "#PLAYLIST:\(clean)\n" }
        header = Array(head.utf8)
    }

    func nextPart() -> BodyPart? {
        if finished { return nil }
        var text = header ?? []
        header = nil
        text.reserveCapacity(text.count + Self.entriesPerPiece * 200)
        while text.count < 16 * 1024 && next < ids.count {
            let slice = Array(ids[next..<min(ids.count, next + Self.entriesPerPiece)])
            next += slice.count
            // A database error ends the list where it is: the response is already under way.
            do {
                try store.tracks.forEachPlaylistLine(ids: slice) { row in Self.appendEntry(row, base: base, signer: signer, to: &text) }
            } catch {
                next = ids.count
            }
        }
        if text.isEmpty {
            finished = true
            return chunked ? .bytes(Array("0\r\n\r\n".utf8)) : nil
        }
        guard chunked else { return .bytes(text) }
        var framed = Array((String(text.count, radix: 16) + "\r\n").utf8)
        framed.reserveCapacity(framed.count + text.count + 2)
        framed += text
        framed += [0x0D, 0x0A]
        return .bytes(framed)
    }

    /// `#EXTINF:<seconds>,<artist> - <title>` and the location, as `M3UWriter.render` writes
    /// `PlaylistRoutes.m3u`'s entry for the track; plain ASCII text (nearly all) is copied as bytes.
    /// The row: path, title, artist, duration_s (`TrackRepository.forEachPlaylistLine`).
    static func appendEntry(_ row: SQLiteDatabase.Statement, base: [UInt8], signer: LinkSigner? = nil, to out: inout [UInt8]) {
        let path = row.textBytes(0)
        out.append(contentsOf: "#EXTINF:".utf8)
        JSONBytes.integer(M3UWriter.seconds(row.double(3)), &out)
        out.append(UInt8(ascii: ","))
        let title = row.isNull(1) ? fileName(path) : row.textBytes(1)
        let artist = row.textBytes(2)
        // The label's ends: "<artist> - <title>", or the title alone without an artist.
        let first = artist.isEmpty ? title.first : artist.first
        let last = title.isEmpty && !artist.isEmpty ? 0x20 : title.last
        if isPlainASCII(title), isPlainASCII(artist), first != 0x20, last != 0x20 {
            if !artist.isEmpty {
                out.append(contentsOf: artist)
                out.append(contentsOf: " - ".utf8)
            }
            out.append(contentsOf: title)
        } else {
            let label = Track.label(title: String(decoding: title, as: UTF8.self),
                                    artist: row.isNull(2) ? nil : String(decoding: artist, as: UTF8.self))
            out.append(contentsOf: M3UWriter.escapeTitle(label).utf8)
        }
        out.append(UInt8(ascii: "\n"))
        out.append(contentsOf: base)
        let linkStart = out.count
        out.append(contentsOf: APIRoutes.mediaPrefix.utf8)
        APIRoutes.appendPercentEncoded(path, to: &out)
        if let signer {
            out.append(UInt8(ascii: "?"))
            out.append(contentsOf: signer.query(String(decoding: out[linkStart..<(out.count - 1)], as: UTF8.self)).utf8)
        }
        out.append(UInt8(ascii: "\n"))
    }

    /// The last component of a relative path (`Track.fileName`).
    static func fileName(_ path: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return UnsafeBufferPointer(rebasing: path[(slash + 1)...])
    }

    /// Bytes 0x20-0x7E only: nothing `M3UWriter.escapeTitle` would change (but the ends' spaces).
    static func isPlainASCII(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte < 0x20 || byte > 0x7E { return false }
        return true
    }
}
