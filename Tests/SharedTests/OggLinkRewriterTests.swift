import Testing
@testable import StreamShared

/// The pass-through Ogg channel's rewrite of files into links: a new serial per logical stream
/// (the CRC computed again, nothing else touched), other streams left out, damage skipped, a
/// page cut off kept for the next bytes.
@Suite struct OggLinkRewriterTests {
    /// One page holding one packet, its CRC set.
    static func page(serial: UInt32, flags: UInt8 = 0, granule: UInt64 = 0, body: [UInt8]) -> [UInt8] {
        var bytes = Array("OggS".utf8) + [0, flags] + (0..<8).map { UInt8(truncatingIfNeeded: granule >> (8 * UInt64($0))) }
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: serial >> (8 * UInt32($0))) }
        bytes += [0, 0, 0, 0] + [0, 0, 0, 0] + [1, UInt8(body.count)] + body
        let crc = OggCRC.crc32(bytes[...])
        for i in 0..<4 { bytes[22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return bytes
    }

    static let opusHead = Array("OpusHead".utf8) + [1, 2, 0x38, 1, 0x80, 0xBB, 0, 0, 0, 0, 0]
    static let theora = [0x80] + Array("theora".utf8) + [UInt8](repeating: 3, count: 12)

    /// A file: an Opus stream (head, tags, one audio page ending it) beside a Theora one.
    static func file(serial: UInt32) -> [UInt8] {
        page(serial: serial, flags: 0x02, body: opusHead) + page(serial: 99, flags: 0x02, body: theora)
            + page(serial: serial, body: Array("OpusTags".utf8) + [0, 0, 0, 0, 0, 0, 0, 0])
            + page(serial: 99, granule: 5, body: [1, 2, 3])
            + page(serial: serial, flags: 0x04, granule: 960, body: [0xFC, 1, 2])
    }

    @Test func withSerial_rewritesTheSerialAndTheCRC_only() throws {
        let original = Self.page(serial: 7, flags: 0x02, body: Self.opusHead)
        #expect(try OggPage.parse(original[...])?.serial == 7)
        let rewritten = OggLinkRewriter.withSerial(0xDEAD_BEEF, page: original[...])
        let page = try #require(try OggPage.parse(rewritten[...]), "the CRC checks")
        #expect(page.serial == 0xDEAD_BEEF && page.isBeginningOfStream && page.granulePosition == 0)
        #expect(rewritten == Self.page(serial: 0xDEAD_BEEF, flags: 0x02, body: Self.opusHead))
        #expect(Array(rewritten[27...]) == Array(original[27...]), "the lacing and body as they were")
    }

    @Test func files_becomeLinks_withSerialsOfTheirOwn() throws {
        var rewriter = OggLinkRewriter(firstSerial: UInt32.max)
        var out: [OggLinkRewriter.Page] = []
        // The same file twice (a track that follows itself), each with its own serial.
        for _ in 0..<2 {
            rewriter.beginFile()
            let bytes = Self.file(serial: 7)
            let (consumed, pages) = rewriter.take(bytes[...], isComplete: true)
            #expect(consumed == bytes.count)
            out += pages
        }
        #expect(out.count == 6, "the Theora pages left out")
        let parsed = try out.map { try #require(try OggPage.parse($0.bytes[...])) }
        #expect(parsed.map(\.serial) == [UInt32.max, UInt32.max, UInt32.max, 0, 0, 0], "serials count on, wrapping")
        #expect(out.map(\.startsLink) == [UInt32.max, nil, nil, 0, nil, nil])
        #expect(parsed.map(\.granulePosition) == [0, 0, 960, 0, 0, 960], "granules as the file has them")
    }

    @Test func damage_isSkipped_andACutPage_waitsForMore() throws {
        var rewriter = OggLinkRewriter(firstSerial: 1)
        let bytes = Array("junk OggS not a page".utf8) + Self.file(serial: 3)
        // In two pieces, cut inside the third page: the first call keeps the cut page.
        let cut = bytes.count - 20
        let (consumed, first) = rewriter.take(bytes[..<cut], isComplete: false)
        #expect(first.count == 2 && consumed < cut)
        let (rest, second) = rewriter.take(bytes[consumed...], isComplete: true)
        #expect(consumed + rest == bytes.count)
        #expect((first + second).count == 3 && (first + second).allSatisfy { (try? OggPage.parse($0.bytes[...]))??.serial == 1 })
        // Nothing but junk: all of it used once complete, nothing out.
        let (used, none) = rewriter.take(Array("OggS garbage".utf8)[...], isComplete: true)
        #expect(used == 12 && none.isEmpty)
    }
}
