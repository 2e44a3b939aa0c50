import Testing
@testable import StreamShared

/// UTF-16 text frames across every form writers produce: encoding 1 and 2, either byte order
/// mark or none, with and without terminators, odd lengths, unsynchronised, and read from a
/// slice that starts on an odd index. Also the exact frames LAME wrote for the Unicode track
/// of the generated library, both correct and as a non-UTF-8 locale left them.
@Suite struct ID3UTF16Tests {
    typealias B = ID3v2Bytes

    /// Texts whose first non-ASCII character comes early ("Ç", "ä", "Ü": the ones the broken
    /// media stopped at), plus U+0100 and U+00FF (a zero byte and an 0xFF byte next to a
    /// neighbour's zero byte) and a surrogate pair.
    static let texts = ["Ça va — chanson", "Bände & Chœur", "Album Ünïcode", "aĀb ÿ𝄞 z"]

    enum Mark: CaseIterable, CustomStringConvertible {
        case littleEndian, bigEndian, none
        var description: String {
            switch self {
            case .littleEndian: return "FF FE"
            case .bigEndian: return "FE FF"
            case .none: return "no BOM"
            }
        }
    }

    /// One value's bytes after the encoding byte: the mark, then the text in `bigEndian` order.
    static func value(_ text: String, mark: Mark, bigEndian: Bool) -> [UInt8] {
        let bytes = bigEndian ? B.utf16BEBytes(text) : B.utf16LEBytes(text)
        switch mark {
        case .littleEndian: return [0xFF, 0xFE] + bytes
        case .bigEndian: return [0xFE, 0xFF] + bytes
        case .none: return bytes
        }
    }

    /// Every (encoding, mark, byte order) a reader can decode: a mark states the order; without
    /// one, encoding 2 means big-endian and encoding 1 is guessed from the zero bytes.
    static var forms: [(encoding: UInt8, mark: Mark, bigEndian: Bool)] {
        var out: [(UInt8, Mark, Bool)] = []
        for encoding: UInt8 in [1, 2] {
            out += [(encoding, .littleEndian, false), (encoding, .bigEndian, true)]
        }
        out += [(1, .none, false), (1, .none, true), (2, .none, true)]
        return out
    }

    @Test func everyForm_decodesTheWholeText() throws {
        for text in Self.texts {
            for form in Self.forms {
                // terminators: 0, 1 or 2 zero code units; odd: one stray byte at the very end.
                for terminators in 0...2 {
                    for odd in [false, true] {
                        let content = [form.encoding] + Self.value(text, mark: form.mark, bigEndian: form.bigEndian)
                            + [UInt8](repeating: 0, count: 2 * terminators) + (odd ? [0x41] : [])
                        let label = "\(text) enc \(form.encoding) \(form.mark) \(form.bigEndian ? "BE" : "LE") "
                            + "terminators \(terminators) odd \(odd)"
                        #expect(ID3Text.frameValue(content[...]) == text, "\(label)")
                        for version: UInt8 in [3, 4] {
                            let tag = B.tag(version: version, body: B.frame("TPE1", content, version: version))
                            // One byte in front, so the tag and every frame start on an odd index.
                            let file = [0xEE] + tag
                            #expect(try ID3v2.parse(file[1...]).tags.artist == text, "\(label) v2.\(version)")
                        }
                    }
                }
            }
        }
    }

    @Test func unsynchronised_decodesTheWholeText() throws {
        // FF FE and U+00FF (FF 00 little-endian) are the bytes unsynchronisation changes.
        for text in Self.texts {
            for form in Self.forms {
                let content = [form.encoding] + Self.value(text, mark: form.mark, bigEndian: form.bigEndian) + [0, 0]
                let label = "\(text) enc \(form.encoding) \(form.mark) \(form.bigEndian ? "BE" : "LE")"
                let v23 = B.tag(version: 3, flags: 0x80, body: B.unsynchronise(B.frame("TIT2", content, version: 3)))
                #expect(try ID3v2.parse(v23[...]).tags.title == text, "\(label) 2.3 tag-level")
                let v24Frame = B.frame("TIT2", B.unsynchronise(content), version: 4, formatFlags: 0x02)
                #expect(try ID3v2.parse(B.tag(version: 4, body: v24Frame)[...]).tags.title == text, "\(label) 2.4 frame")
            }
        }
    }

    @Test func decode_consumesTheMarkTextAndTerminator() {
        for form in Self.forms {
            let text = "Ünï"
            let bytes = Self.value(text, mark: form.mark, bigEndian: form.bigEndian)
            let encoding = ID3TextEncoding(rawValue: form.encoding) ?? .latin1
            let label = "enc \(form.encoding) \(form.mark) \(form.bigEndian ? "BE" : "LE")"
            let ended = ID3Text.decode((bytes + [0, 0] + Array("next".utf8))[...], encoding: encoding)
            #expect(ended == ID3DecodedString(text: text, consumed: bytes.count + 2, terminated: true), "\(label)")
            let open = ID3Text.decode((bytes + [0x41])[...], encoding: encoding)
            #expect(open == ID3DecodedString(text: text, consumed: bytes.count + 1, terminated: false), "\(label) odd")
        }
    }

    @Test func zeroBytesOffTheCodeUnitGrid_areNotTerminators() {
        // "aĀ" little-endian is 61 00 00 01 and "Āa" big-endian 01 00 00 61: the 00 00 in the
        // middle straddles two code units.
        #expect(ID3Text.frameValue([1, 0xFF, 0xFE, 0x61, 0x00, 0x00, 0x01][...]) == "aĀ")
        #expect(ID3Text.frameValue([1, 0xFE, 0xFF, 0x01, 0x00, 0x00, 0x61][...]) == "Āa")
        #expect(ID3Text.frameValue([2, 0x01, 0x00, 0x00, 0x61][...]) == "Āa")
    }

    /// The tag LAME 3.100 writes for `--id3v2-utf16 --tt "Ça va — chanson" --tn 1 --ta "Bände & Chœur"
    /// --tl "Album Ünïcode"`: ID3v2.3, each value FF FE and UTF-16LE text, no terminators.
    static func lameTag(title: String, artist: String, album: String) -> [UInt8] {
        let tsse = B.frame("TSSE", B.latin1("LAME 64bits version 3.100 (http://lame.sf.net)"), version: 3)
        let frames = [("TIT2", title), ("TRCK", "1"), ("TPE1", artist), ("TALB", album)]
            .map { B.frame($0.0, B.utf16($0.1, bigEndian: false), version: 3) }
        return B.tag(version: 3, body: tsse + frames.joined())
    }

    @Test func lameUTF16Tag_givesTheFullTexts() throws {
        let tag = try ID3v2.parse(Self.lameTag(title: "Ça va — chanson", artist: "Bände & Chœur", album: "Album Ünïcode")[...])
        #expect(tag.tags == TrackTags(title: "Ça va — chanson", artist: "Bände & Chœur", album: "Album Ünïcode", track: "1"))
    }

    /// Under a C/POSIX locale LAME converts its arguments only up to the first non-ASCII byte, so
    /// the file itself holds a bare mark, "B" and "Album " (ffprobe reads the same). Those are
    /// the values the reverted change was blamed for; the parser reports what the bytes say.
    @Test func lameTagFromANonUTF8Locale_holdsTheCutTexts() throws {
        let bytes = Self.lameTag(title: "", artist: "B", album: "Album ")
        #expect(B.frame("TPE1", B.utf16("B", bigEndian: false), version: 3)
                == Array("TPE1".utf8) + [0, 0, 0, 5, 0, 0, 1, 0xFF, 0xFE, 0x42, 0x00], "TPE1 byte for byte as the cut file held it")
        #expect(B.frame("TIT2", B.utf16("", bigEndian: false), version: 3)
                == Array("TIT2".utf8) + [0, 0, 0, 3, 0, 0, 1, 0xFF, 0xFE], "TIT2: a mark and no text")
        let tag = try ID3v2.parse(bytes[...])
        #expect(tag.tags == TrackTags(title: nil, artist: "B", album: "Album ", track: "1"))
    }
}
