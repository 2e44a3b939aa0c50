import Testing
import TestSupport
@testable import StreamShared

/// Builds ID3v2 tags byte by byte.
enum ID3Builder {
    /// A frame for version 2 (3-char ids, 24-bit sizes), 3 (plain sizes) or 4 (synchsafe sizes).
    static func frame(_ id: String, _ body: [UInt8], version: UInt8, flags: UInt8 = 0) -> [UInt8] {
        switch version {
        case 2: return Array(id.utf8) + [UInt8(body.count >> 16 & 0xFF), UInt8(body.count >> 8 & 0xFF), UInt8(body.count & 0xFF)] + body
        case 3: return Array(id.utf8) + be32(body.count) + [0, flags] + body
        default: return Array(id.utf8) + synchsafe(body.count) + [0, flags] + body
        }
    }

    static func latin1(_ text: String) -> [UInt8] { [0] + Array(text.utf8) }

    static func tag(version: UInt8, flags: UInt8 = 0, body: [UInt8], padding: Int = 0, footer: Bool = false) -> [UInt8] {
        let content = body + [UInt8](repeating: 0, count: padding)
        var out = Array("ID3".utf8) + [version, 0, flags] + synchsafe(content.count) + content
        if footer { out += Array("3DI".utf8) + [version, 0, flags] + synchsafe(content.count) }
        return out
    }
}

@Suite struct ID3v2Tests {
    @Test func v23_textFrames() throws {
        let body = ID3Builder.frame("TIT2", ID3Builder.latin1("Title"), version: 3)
            + ID3Builder.frame("TPE1", ID3Builder.latin1("Artist"), version: 3)
            + ID3Builder.frame("TALB", ID3Builder.latin1("Album"), version: 3)
            + ID3Builder.frame("TRCK", ID3Builder.latin1("3/12"), version: 3)
        let bytes = ID3Builder.tag(version: 3, body: body, padding: 64)
        #expect(try ID3v2.totalSize(atStartOf: bytes[...]) == bytes.count)
        let tag = try ID3v2.parse(bytes[...])
        #expect(tag.majorVersion == 3)
        #expect(tag.tags == TrackTags(title: "Title", artist: "Artist", album: "Album", track: "3/12"))
    }

    @Test func v22_threeCharacterFrames() throws {
        let body = ID3Builder.frame("TT2", ID3Builder.latin1("Old"), version: 2)
            + ID3Builder.frame("TP1", ID3Builder.latin1("Timer"), version: 2)
            + ID3Builder.frame("PIC", [0] + Array("JPG".utf8) + [3] + [0] + [UInt8](repeating: 0xAB, count: 500), version: 2)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 2, body: body)[...])
        #expect(tag.tags.title == "Old")
        #expect(tag.tags.artist == "Timer")
        #expect(tag.tags.coverArtBytes == 500)
    }

    @Test func v24_synchsafeFrameSizesAndUTF8() throws {
        let long = String(repeating: "é", count: 100)        // 200 bytes: synchsafe size differs from plain
        let body = ID3Builder.frame("TIT2", [3] + Array(long.utf8), version: 4)
            + ID3Builder.frame("TPE1", [3] + Array("A\u{0}B".utf8), version: 4)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 4, body: body)[...])
        #expect(tag.tags.title == long)
        #expect(tag.tags.artist == "A", "v2.4 multiple values: the first one")
    }

    @Test func utf16_withBothByteOrderMarks() throws {
        let le: [UInt8] = [1, 0xFF, 0xFE] + Array("Hé".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] } + [0, 0]
        let be: [UInt8] = [1, 0xFE, 0xFF] + Array("Ré".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let plainBE: [UInt8] = [2] + Array("Zü".utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let body = ID3Builder.frame("TIT2", le, version: 3) + ID3Builder.frame("TPE1", be, version: 3)
            + ID3Builder.frame("TALB", plainBE, version: 3)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, body: body)[...])
        #expect(tag.tags.title == "Hé")
        #expect(tag.tags.artist == "Ré")
        #expect(tag.tags.album == "Zü")
    }

    @Test func apic_coverSize() throws {
        let picture = [UInt8](repeating: 0xFF, count: 1234)
        let apic: [UInt8] = [0] + Array("image/jpeg".utf8) + [0, 3] + Array("cover".utf8) + [0] + picture
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, body: ID3Builder.frame("APIC", apic, version: 3))[...])
        #expect(tag.tags.coverArtBytes == 1234)
    }

    @Test func tagLevelUnsynchronisation() throws {
        // The body as stored: every 0xFF is followed by an inserted 0x00.
        let frameBytes = ID3Builder.frame("TIT2", [0] + Array("a".utf8) + [0xFF] + Array("b".utf8), version: 3)
        var stored: [UInt8] = []
        for b in frameBytes { stored.append(b); if b == 0xFF { stored.append(0) } }
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, flags: 0x80, body: stored)[...])
        #expect(tag.tags.title == "a\u{FF}b")
    }

    @Test func v23_extendedHeaderIsSkipped() throws {
        let extended: [UInt8] = be32(6) + [0, 0, 0, 0, 0, 0]
        let body = extended + ID3Builder.frame("TIT2", ID3Builder.latin1("X"), version: 3)
        #expect(try ID3v2.parse(ID3Builder.tag(version: 3, flags: 0x40, body: body)[...]).tags.title == "X")
    }

    @Test func v24_extendedHeaderIsSkipped() throws {
        let extended: [UInt8] = synchsafe(6) + [1, 0]
        let body = extended + ID3Builder.frame("TIT2", ID3Builder.latin1("Y"), version: 4)
        #expect(try ID3v2.parse(ID3Builder.tag(version: 4, flags: 0x40, body: body)[...]).tags.title == "Y")
    }

    @Test func v24_footerAddsTenBytes() throws {
        let body = ID3Builder.frame("TIT2", ID3Builder.latin1("F"), version: 4)
        let bytes = ID3Builder.tag(version: 4, flags: 0x10, body: body, footer: true)
        let tag = try ID3v2.parse(bytes[...])
        #expect(tag.hasFooter)
        #expect(tag.totalSize == bytes.count)
        #expect(tag.totalSize == 10 + body.count + 10)
    }

    @Test func v24_frameUnsyncAndDataLength() throws {
        let text: [UInt8] = [0, 0x41, 0xFF, 0x00, 0x42]          // stored with unsync: "A\u{FF}B"
        let withLength = synchsafe(4) + text
        let body = ID3Builder.frame("TIT2", withLength, version: 4, flags: 0x03)
        #expect(try ID3v2.parse(ID3Builder.tag(version: 4, body: body)[...]).tags.title == "A\u{FF}B")
    }

    @Test func compressedFrame_isSkipped() throws {
        let body = ID3Builder.frame("TIT2", [0x78, 0x9C, 0x01, 0x02], version: 3, flags: 0x80)
            + ID3Builder.frame("TPE1", ID3Builder.latin1("Kept"), version: 3)
        let tag = try ID3v2.parse(ID3Builder.tag(version: 3, body: body)[...])
        #expect(tag.tags.title == nil)
        #expect(tag.tags.artist == "Kept")
    }

    @Test func frameOverrunningTheTag_throws() {
        var frame = ID3Builder.frame("TIT2", ID3Builder.latin1("abc"), version: 3)
        frame[7] = 200                                            // size far beyond the tag
        #expect(throws: FormatError.self) { try ID3v2.parse(ID3Builder.tag(version: 3, body: frame)[...]) }
    }

    @Test func notID3_isZero_andShort_isNil() throws {
        #expect(try ID3v2.totalSize(atStartOf: Array("RIFF....WAVE".utf8)[...]) == 0)
        #expect(try ID3v2.totalSize(atStartOf: Array("ID3".utf8)[...]) == nil)
        #expect(try ID3v2.totalSize(atStartOf: [0xFF, 0xFB][...]) == 0)
    }

    @Test func badSynchsafeByte_isNotATag() throws {
        let bytes: [UInt8] = Array("ID3".utf8) + [3, 0, 0, 0, 0, 0x80, 0]
        #expect(try ID3v2.totalSize(atStartOf: bytes[...]) == 0)
    }

    @Test func truncatedTag_throws() {
        let bytes = ID3Builder.tag(version: 3, body: ID3Builder.frame("TIT2", ID3Builder.latin1("Z"), version: 3))
        #expect(throws: FormatError.self) { try ID3v2.parse(bytes.dropLast(3)) }
    }
}

@Suite struct TrailingTagsTests {
    static func id3v1(title: String, track: UInt8? = nil) -> [UInt8] {
        var tag = Array("TAG".utf8) + [UInt8](repeating: 0, count: 125)
        for (i, b) in title.utf8.prefix(30).enumerated() { tag[3 + i] = b }
        for (i, b) in "Artist".utf8.enumerated() { tag[33 + i] = b }
        if let track { tag[125] = 0; tag[126] = track }
        return tag
    }

    static func ape(items: Int = 40, header: Bool) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        let size = UInt32(items + 32)
        let flags: UInt32 = header ? 0x8000_0000 : 0
        let footer = Array("APETAGEX".utf8) + le32(2000) + le32(size) + le32(1) + le32(flags) + [UInt8](repeating: 0, count: 8)
        let head = header ? Array("APETAGEX".utf8) + le32(2000) + le32(size) + le32(1) + le32(flags | 0x2000_0000)
            + [UInt8](repeating: 0, count: 8) : []
        return head + [UInt8](repeating: 0x61, count: items) + footer
    }

    @Test func id3v1_withTrackNumber() throws {
        let audio = [UInt8](repeating: 0x55, count: 1000)
        let file = audio + Self.id3v1(title: "Old Song", track: 7)
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.trailingBytes == 128)
        #expect(result.id3v1?.title == "Old Song")
        #expect(result.id3v1?.artist == "Artist")
        #expect(result.id3v1?.track == "7")
    }

    @Test func apeWithoutHeader() throws {
        let file = [UInt8](repeating: 0x55, count: 500) + Self.ape(header: false)
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.apeSize == 72)
        #expect(result.trailingBytes == 72)
    }

    @Test func apeWithHeaderThenID3v1() throws {
        let file = [UInt8](repeating: 0x55, count: 500) + Self.ape(header: true) + Self.id3v1(title: "Both")
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.apeSize == 104)
        #expect(result.trailingBytes == 104 + 128)
        #expect(result.id3v1?.title == "Both")
    }

    @Test func nothingAtTheEnd() throws {
        let file = [UInt8](repeating: 0x55, count: 300)
        #expect(try TrailingTags.scan(tail: file[...], fileSize: file.count) == TrailingTags(trailingBytes: 0, id3v1: nil, apeSize: 0))
    }

    @Test func lyingAPESize_throws() {
        var tag = Self.ape(header: false)
        let sizeAt = tag.count - 32 + 12
        tag[sizeAt + 3] = 0x7F                                     // about 2 GB
        let file = [UInt8](repeating: 0x55, count: 100) + tag
        #expect(throws: FormatError.self) { try TrailingTags.scan(tail: file[...], fileSize: file.count) }
    }

    @Test func lyrics3v2BeforeID3v1() throws {
        let body = Array("LYRICSBEGIN".utf8) + Array("IND00003110".utf8)
        let lyrics = body + Array(String(format6(body.count)).utf8) + Array("LYRICS200".utf8)
        let file = [UInt8](repeating: 0x55, count: 200) + lyrics + Self.id3v1(title: "L")
        let result = try TrailingTags.scan(tail: file[...], fileSize: file.count)
        #expect(result.trailingBytes == lyrics.count + 128)
    }

    private func format6(_ n: Int) -> String {
        let s = String(n)
        return String(repeating: "0", count: 6 - s.count) + s
    }
}

@Suite struct TagFuzzTests {
    @Test(.timeLimit(.scaledMinutes(5))) func id3v2_truncationsAndMutations() {
        let body = ID3Builder.frame("TIT2", ID3Builder.latin1("Title"), version: 3)
            + ID3Builder.frame("APIC", [0] + Array("image/png".utf8) + [0, 3, 0] + [UInt8](repeating: 7, count: 64), version: 3)
            + ID3Builder.frame("TPE1", [1, 0xFF, 0xFE, 0x41, 0, 0, 0], version: 3)
        let v23 = ID3Builder.tag(version: 3, body: body, padding: 16)
        var unsyncBody: [UInt8] = []
        for b in ID3Builder.frame("TIT2", [0, 0xFF, 0x41], version: 4) { unsyncBody.append(b); if b == 0xFF { unsyncBody.append(0) } }
        let v24 = ID3Builder.tag(version: 4, flags: 0x90, body: unsyncBody, footer: true)
        for sample in [v23, v24] {
            var values = 0, errors = 0
            Fuzz.forEachTruncation(of: sample) { prefix in
                do { _ = try ID3v2.parse(prefix); values += 1 } catch { errors += 1 }
            }
            #expect(values + errors == sample.count)
            values = 0; errors = 0
            Fuzz.forEachMutation(of: sample, count: 10_000) { mutated in
                do {
                    if let size = try ID3v2.totalSize(atStartOf: mutated[...]), size > 0, size <= mutated.count {
                        _ = try ID3v2.parse(mutated[...])
                    }
                    values += 1
                } catch { errors += 1 }
            }
            #expect(values + errors == 10_000)
            #expect(values > 0 && errors > 0, "values \(values), errors \(errors)")
        }
    }

    @Test(.timeLimit(.scaledMinutes(5))) func trailingTags_mutations() {
        let file = [UInt8](repeating: 0x55, count: 64) + TrailingTagsTests.ape(header: true) + TrailingTagsTests.id3v1(title: "M")
        var outcomes = 0
        Fuzz.forEachTruncation(of: file) { prefix in
            _ = try? TrailingTags.scan(tail: prefix, fileSize: prefix.count)
            outcomes += 1
        }
        Fuzz.forEachMutation(of: file, count: 10_000) { mutated in
            _ = try? TrailingTags.scan(tail: mutated[...], fileSize: mutated.count)
            outcomes += 1
        }
        #expect(outcomes == file.count + 10_000)
    }
}
