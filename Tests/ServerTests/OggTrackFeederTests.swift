import Testing
@testable import StreamRadio
@testable import StreamShared

/// The pass-through Ogg channel's page rewrite: a new serial, the CRC computed again, nothing else touched.
@Suite struct OggTrackFeederTests {
    /// A BOS page holding one packet, its CRC set.
    static func page(serial: UInt32, body: [UInt8]) -> [UInt8] {
        var bytes = Array("OggS".utf8) + [0, 0x02] + [UInt8](repeating: 0, count: 8)
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: serial >> (8 * UInt32($0))) }
        bytes += [0, 0, 0, 0] + [0, 0, 0, 0] + [1, UInt8(body.count)] + body
        let crc = OggCRC.crc32(bytes[...])
        for i in 0..<4 { bytes[22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return bytes
    }

    @Test func withSerial_rewritesTheSerialAndTheCRC_only() throws {
        let body = Array("OpusHead".utf8) + [1, 2, 0x38, 1, 0x80, 0xBB, 0, 0, 0, 0, 0]
        let original = Self.page(serial: 7, body: body)
        #expect(try OggPage.parse(original[...])?.serial == 7)
        let rewritten = OggTrackFeeder.withSerial(0xDEAD_BEEF, page: original[...])
        let page = try #require(try OggPage.parse(rewritten[...]), "the CRC checks")
        #expect(page.serial == 0xDEAD_BEEF && page.isBeginningOfStream && page.granulePosition == 0)
        #expect(rewritten == Self.page(serial: 0xDEAD_BEEF, body: body))
        #expect(Array(rewritten[27...]) == Array(original[27...]), "the lacing and body as they were")
    }
}
