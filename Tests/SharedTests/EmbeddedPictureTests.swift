import Testing
import TestSupport
@testable import StreamShared

/// The cover picture read from ID3v2 APIC/PIC frames and MP4 `covr` items.
@Suite struct EmbeddedPictureTests {
    typealias B = ID3v2Bytes
    typealias M = MP4Builder

    /// Picture bytes that start as a JPEG does (SOI, then a marker).
    static func jpeg(_ count: Int) -> [UInt8] { [0xFF, 0xD8, 0xFF, 0xE0] + B.jpeg(count) }

    @Test func id3v23_frontCoverWinsOverAnEarlierPicture() throws {
        let back = Self.jpeg(100), front = Self.jpeg(200)
        let body = B.frame("APIC", B.apic(type: 4, picture: back), version: 3)
            + B.frame("TIT2", B.latin1("Title"), version: 3)
            + B.frame("APIC", B.apic(mime: "image/png", type: 3, picture: front), version: 3)
            + B.frame("APIC", B.apic(type: 3, picture: Self.jpeg(300)), version: 3)
        let file = B.tag(version: 3, body: body, padding: 64) + [0xFF, 0xFB, 0x90, 0x00]
        let picture = try #require(try EmbeddedPictureReader.picture(in: MemoryBytes(file)))
        // The bytes say JPEG whatever the frame declared.
        #expect(picture == EmbeddedPicture(mimeType: "image/jpeg", data: front))
    }

    @Test func id3v23_firstPictureWithoutAFrontCover() throws {
        let file = B.tag(version: 3, body: B.frame("APIC", B.apic(type: 0, picture: Self.jpeg(50)), version: 3))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file))?.data == Self.jpeg(50))
    }

    @Test func id3v24_unsynchronisedFrame() throws {
        let picture = Self.jpeg(120)
        let content = B.unsynchronise(B.apic(picture: picture))
        let file = B.tag(version: 4, body: B.frame("APIC", content, version: 4, formatFlags: 0x02))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file))?.data == picture)
    }

    @Test func id3v23_wholeTagUnsynchronised() throws {
        let picture = Self.jpeg(80)
        let body = B.unsynchronise(B.frame("APIC", B.apic(description: [0xFF, 0xFE, 0x41, 0x00, 0, 0], encoding: 1, picture: picture), version: 3))
        let file = B.tag(version: 3, flags: 0x80, body: body)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file))?.data == picture)
    }

    @Test func id3v22_pic() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3]
        let file = B.tag(version: 2, body: B.frame("PIC", B.pic(format: "PNG", picture: png), version: 2))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) == EmbeddedPicture(mimeType: "image/png", data: png))
    }

    @Test func id3_withoutPicture_orMalformedPicture_isNil() throws {
        let plain = B.tag(version: 3, body: B.frame("TIT2", B.latin1("T"), version: 3))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(plain)) == nil)
        let noDescriptionEnd: [UInt8] = [0] + Array("image/jpeg".utf8) + [0, 3] + Array("desc".utf8)
        let broken = B.tag(version: 3, body: B.frame("APIC", noDescriptionEnd, version: 3))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(broken)) == nil)
    }

    @Test func id3_frameOverrunningTheTag_throws() {
        var frame = B.frame("APIC", B.apic(picture: Self.jpeg(40)), version: 3)
        frame[7] = 200        // size byte: past the end of the tag
        #expect(throws: FormatError.self) { try EmbeddedPictureReader.picture(in: MemoryBytes(B.tag(version: 3, body: frame))) }
    }

    @Test func unknownDeclaredType_isKeptOnlyWhenItIsAnImageType() {
        #expect(EmbeddedPictureReader.mimeType(declared: "image/x-icon", data: [1, 2]) == "image/x-icon")
        #expect(EmbeddedPictureReader.mimeType(declared: "text/html", data: [1, 2]) == "application/octet-stream")
        #expect(EmbeddedPictureReader.mimeType(declared: "image/a\r\nb", data: [1, 2]) == "application/octet-stream")
        #expect(EmbeddedPictureReader.mimeType(declared: "JPG", data: [1, 2]) == "image/jpeg")
    }

    static func covr(_ picture: [UInt8], type: Int = 13) -> [UInt8] {
        M.box("covr", M.box("data", be32(type) + be32(0) + picture))
    }

    static func mp4(moovChildren: [UInt8], moovFirst: Bool = true) -> [UInt8] {
        let ftyp = M.box("ftyp", Array("M4A ".utf8) + be32(0) + Array("M4A mp42isom".utf8))
        let moov = M.box("moov", moovChildren)
        let mdat = M.box("mdat", [UInt8](repeating: 0x21, count: 100))
        return moovFirst ? ftyp + moov + mdat : ftyp + mdat + moov
    }

    @Test func mp4_covrInUdtaMeta_moovAtTheEnd() throws {
        let picture = Self.jpeg(64)
        let ilst = M.box("ilst", M.box("\u{A9}nam", M.box("data", be32(1) + be32(0) + Array("T".utf8))) + Self.covr(picture))
        let meta = M.fullBox("meta", M.box("hdlr", [UInt8](repeating: 0, count: 25)) + ilst)
        let file = Self.mp4(moovChildren: M.box("mvhd", [UInt8](repeating: 0, count: 100)) + M.box("udta", meta), moovFirst: false)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) == EmbeddedPicture(mimeType: "image/jpeg", data: picture))
    }

    @Test func mp4_covrInAQuickTimeMetaUnderMoov_png() throws {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 9, 9]
        let meta = M.box("meta", M.box("ilst", Self.covr(png, type: 14)))       // QuickTime: no version/flags
        let file = Self.mp4(moovChildren: meta)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) == EmbeddedPicture(mimeType: "image/png", data: png))
    }

    @Test func mp4_withoutCovr_isNil_andOtherFilesToo() throws {
        let file = Self.mp4(moovChildren: M.box("udta", M.fullBox("meta", M.box("ilst", []))))
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) == nil)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(Array("RIFF....WAVEfmt ".utf8))) == nil)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes([])) == nil)
    }

    @Test func mp4_boxOverrunningTheFile_endsTheWalk() throws {
        let meta = M.box("meta", M.box("ilst", Self.covr(Self.jpeg(20))))
        var file = Self.mp4(moovChildren: meta, moovFirst: false)
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) != nil)
        let mdat = 8 + 4 + 4 + 12                    // the ftyp's size: mdat follows it
        file[mdat] = 0x7F                            // mdat's size now runs far past the end of the file
        #expect(try EmbeddedPictureReader.picture(in: MemoryBytes(file)) == nil)
    }

    @Test func generatedLibrary_vbrV2Cover() throws {
        guard let file = try TagMediaFiles.load("vbr-v2.mp3") else { return }
        let picture = try #require(try EmbeddedPictureReader.picture(in: MemoryBytes(file)))
        let tag = try ID3v2.parse(file[...])
        #expect(picture.mimeType == "image/jpeg")
        #expect(picture.data.count == tag.tags.coverArtBytes)
        #expect(picture.data.starts(with: [0xFF, 0xD8, 0xFF]) && picture.data.suffix(2) == [0xFF, 0xD9])
    }
}
