import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// `EmbeddedLyricsReader` on the real-world corpus (../shared/corpus, read in place): what
/// mutagen reads from each file's USLT frames and LYRICS/UNSYNCEDLYRICS comments (written out
/// here as mutagen 1.46 gives them), and bounds and damage on made-up tags.
@Suite struct EmbeddedLyricsTests {
    static var corpus: URL { TestPaths.packageRoot.appendingPathComponent("../shared/corpus").standardized }

    /// (language, synced, the lines as (start, text)) of each set, in the file's order.
    typealias Expected = [(String, Bool, [(Int?, String)])]

    static func read(_ relative: String) throws -> [EmbeddedLyrics] {
        let bytes = try [UInt8](Data(contentsOf: corpus.appendingPathComponent(relative)))
        return try EmbeddedLyricsReader.lyrics(in: MemoryBytes(bytes))
    }

    static func shape(_ found: [EmbeddedLyrics], firstLines: Int = 3) -> [String] {
        found.map { set in
            "\(set.language) \(set.lyrics.synced ? "synced" : "plain") "
                + set.lyrics.lines.prefix(firstLines).map { "\($0.startMilliseconds.map(String.init) ?? "-")|\($0.text)" }.joined(separator: " / ")
        }
    }

    @Test(arguments: [
        // mutagen: USLT(encoding=LATIN1, lang='eng', desc='', text='the lyrics').
        ("realworld/corpus/mediafile__bpm.mp3", ["eng plain -|the lyrics"]),
        ("realworld/corpus/beets__date.mp3", ["eng plain -|the lyrics"]),
        // mutagen: encoding UTF8.
        ("realworld/corpus/beets__unicode’d.mp3", ["eng plain -|the lyrics"]),
        // mutagen: lang='en\x00', not a language code.
        ("realworld/corpus/mediafile__cbr.mp3", ["xxx plain -|the lyrics"]),
        // mutagen: USLT with an empty text: no lyrics.
        ("realworld/corpus/beets__image-jpeg.mp3", []),
        // mutagen: lyrics = ['[00:00.00]This is\n[00:02.50]unspecified', '[00:00.00]This is\n[00:02.50]English'].
        ("realworld-xiph/corpus/navidrome__test.ogg", ["xxx synced 0|This is / 2500|unspecified", "xxx synced 0|This is / 2500|English"]),
        // mutagen, in the file's order: LYRICS = '[00:00.00]\n[00:05.12] 1 2 3, tap your feet, ...', UNSYNCEDLYRICS = '\n1 2 3, tap your feet, ...'.
        ("realworld-xiph/corpus/navidrome__mixed-lyrics.flac",
         ["xxx synced 0| / 5120|1 2 3, tap your feet, such a classic melody / 10130|1 2 3, you know the words, so sing along with me",
          "xxx plain -|1 2 3, tap your feet, such a classic melody / -|1 2 3, you know the words, so sing along with me / -|1 2 3, motley scenes shining through the silver screen"]),
        // mutagen: lyrics = 'Run away, run away, run away\r\nYou don't know who to run from\r\n...'.
        ("realworld-xiph/corpus/musicmeta__01._Make_It_Out_Alive.flac",
         ["xxx plain -|Run away, run away, run away / -|You don't know who to run from / -|Nowhere to go, don't wanna go, nowhere to go"]),
    ])
    func corpus_matchesMutagen(file: String, expected: [String]) throws {
        #expect(Self.shape(try Self.read(file)) == expected)
    }

    /// A tag with a SYLT frame of MPEG-frame times (not read), a USLT frame whose text runs past
    /// the frame, and a SYLT frame whose last time is cut off.
    @Test func damagedFrames_keepWhatIsWhole() throws {
        func frame(_ id: String, _ body: [UInt8]) -> [UInt8] {
            Array(id.utf8) + [0, 0, UInt8(body.count >> 8), UInt8(body.count & 0xFF), 0, 0] + body
        }
        let frames = frame("SYLT", [0] + Array("eng".utf8) + [1, 1, 0] + Array("x".utf8) + [0, 0, 0, 0, 5])
            + frame("SYLT", [0] + Array("fra".utf8) + [2, 1, 0] + Array("un".utf8) + [0, 0, 0, 1, 0] + Array("deux".utf8) + [0, 0, 0])
            + frame("USLT", [0] + Array("eng".utf8) + [0] + Array("words".utf8))
        let size = frames.count
        let tag = Array("ID3".utf8) + [3, 0, 0, UInt8(size >> 21 & 0x7F), UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)] + frames
        #expect(Self.shape(try EmbeddedLyricsReader.id3Lyrics(tag[...])) == ["fra synced 256|un", "eng plain -|words"])
        // The tag claims more than there is: nothing is read past the bytes.
        #expect(try EmbeddedLyricsReader.lyrics(in: MemoryBytes(Array(tag.prefix(20)))).isEmpty)
    }

    @Test func oversizedTag_isATypedRefusal() {
        // An ID3v2 header claiming 200 MB (synchsafe 0x7F 0x7F 0x7F 0x7F is 256 MiB - 1).
        let head = Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F] + [UInt8](repeating: 0, count: 64)
        #expect(throws: FormatError.self) { try EmbeddedLyricsReader.lyrics(in: MemoryBytes(head)) }
    }
}
