/// One ID3v2 frame ready to interpret: its id and its content with the per-frame extras
/// (group byte, data length indicator, 2.4 unsynchronisation) already removed.
struct ID3v2Frame: Sendable, Equatable {
    /// "TIT2" (2.3/2.4) or "TT2" (2.2).
    var id: String
    var content: ArraySlice<UInt8>
}

/// Walks the frames of a tag body (after the extended header). Frames that are compressed or
/// encrypted are stepped over, since decoding them needs zlib or a key this module does not have.
struct ID3v2FrameReader {
    private var reader: ByteReader
    private let majorVersion: UInt8
    private let tagUnsynchronised: Bool

    init(_ reader: ByteReader, header: ID3v2Header) {
        self.reader = reader
        self.majorVersion = header.majorVersion
        self.tagUnsynchronised = header.isUnsynchronised
    }

    private var idLength: Int { majorVersion == 2 ? 3 : 4 }
    private var headerLength: Int { majorVersion == 2 ? 6 : 10 }

    /// The next readable frame; nil at the end of the frames (padding, junk, or too few bytes
    /// for a frame header). Throws `.invalid` when a frame's size runs past the end of the tag.
    mutating func next() throws(FormatError) -> ID3v2Frame? {
        while reader.remaining >= headerLength {
            // Padding (zero bytes) ends the frame list. Bytes that cannot be a frame id end it
            // too: some taggers pad with leftovers instead of zeros, and what came before is good.
            guard isFrameID(at: reader.offset) else { return nil }
            let frameOffset = reader.offset
            let id = String(decoding: try reader.readBytes(idLength), as: UTF8.self)
            let size = try readSize()
            var formatFlags: UInt8 = 0
            if majorVersion >= 3 {
                try reader.skip(1)              // status flags: about editing, not reading
                formatFlags = try reader.readU8()
            }
            guard size <= reader.remaining else {
                throw FormatError.invalid(component: ID3v2.component,
                                          reason: "frame \(id) of \(size) bytes overruns the tag",
                                          offset: ID3v2Header.length + frameOffset)
            }
            let data = try reader.readBytes(size)
            if let content = content(of: data, formatFlags: formatFlags) {
                return ID3v2Frame(id: id, content: content)
            }
        }
        return nil
    }

    /// The frame size: 24-bit (2.2), plain 32-bit (2.3) or synchsafe 32-bit (2.4).
    private mutating func readSize() throws(FormatError) -> Int {
        switch majorVersion {
        case 2: return Int(try reader.readU24BE())
        case 3: return Int(try reader.readU32BE())
        default:
            let raw = try reader.readBytes(4)
            let plain = ID3v2Header.bigEndian(raw)
            // iTunes wrote plain sizes into some 2.4 tags. A byte with its top bit set can only be
            // plain; otherwise the plain reading wins only when the synchsafe one does not land on
            // a frame boundary and the plain one does (the same rule other readers use).
            guard let synchsafe = ID3v2Header.synchsafe(raw) else { return plain }
            if synchsafe != plain {
                let dataStart = reader.offset + 2           // after the two flag bytes
                if !isBoundary(at: dataStart + synchsafe) && isBoundary(at: dataStart + plain) {
                    return plain
                }
            }
            return synchsafe
        }
    }

    /// The bytes to interpret, or nil when the frame must be skipped.
    private func content(of data: ArraySlice<UInt8>, formatFlags: UInt8) -> ArraySlice<UInt8>? {
        switch majorVersion {
        case 2:
            return data
        case 3:
            // %ijk00000: compression, encryption, grouping (one group id byte in front).
            if formatFlags & 0xC0 != 0 { return nil }
            if formatFlags & 0x20 != 0 { return data.isEmpty ? nil : data.dropFirst() }
            return data
        default:
            // %0h00kmnp: grouping, compression, encryption, unsynchronisation, data length
            // indicator. The extra bytes come in flag order: group id, then the 4-byte length.
            if formatFlags & 0x0C != 0 { return nil }
            var content = data
            if formatFlags & 0x40 != 0 {
                guard !content.isEmpty else { return nil }
                content = content.dropFirst()
            }
            if formatFlags & 0x01 != 0 {
                guard content.count >= 4 else { return nil }
                content = content.dropFirst(4)
            }
            // The tag-level flag in 2.4 says every frame is unsynchronised; some writers set only
            // that one, so either flag means the frame needs undoing.
            if formatFlags & 0x02 != 0 || tagUnsynchronised {
                content = ID3Unsynchronisation.remove(content)[...]
            }
            return content
        }
    }

    /// True when a frame id (A-Z, 0-9) starts at `offset` of the body.
    private func isFrameID(at offset: Int) -> Bool {
        guard offset >= 0, offset + idLength <= reader.count else { return false }
        let start = reader.bytes.startIndex + offset
        return reader.bytes[start..<(start + idLength)].allSatisfy {
            ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
        }
    }

    /// True when `offset` is where a frame list may continue: the end, padding, or a frame id.
    private func isBoundary(at offset: Int) -> Bool {
        if offset == reader.count { return true }
        guard offset >= 0, offset < reader.count else { return false }
        return reader.bytes[reader.bytes.startIndex + offset] == 0 || isFrameID(at: offset)
    }
}

/// Gathers the fields `TrackTags` keeps from a tag's frames. The first frame of each kind wins,
/// except that a front cover (picture type 3) replaces an earlier picture of another type.
struct ID3v2FieldCollector {
    private(set) var tags = TrackTags()
    private var coverIsFront = false

    mutating func add(_ frame: ID3v2Frame) {
        switch frame.id {
        case "TIT2", "TT2": tags.title = tags.title ?? ID3Text.frameValue(frame.content)
        case "TPE1", "TP1": tags.artist = tags.artist ?? ID3Text.frameValue(frame.content)
        case "TALB", "TAL": tags.album = tags.album ?? ID3Text.frameValue(frame.content)
        case "TRCK", "TRK": tags.track = tags.track ?? ID3Text.frameValue(frame.content)
        case "TPE2", "TP2": tags.albumArtist = tags.albumArtist ?? ID3Text.frameValue(frame.content)
        case "TPOS", "TPA": tags.disc = tags.disc ?? ID3Text.frameValue(frame.content)
        case "TDRC", "TYER", "TYE": tags.date = tags.date ?? ID3Text.frameValue(frame.content)
        case "TCON", "TCO": tags.genre = tags.genre ?? ID3Text.frameValue(frame.content).map(Self.genre)
        case "TXXX", "TXX":
            // User text: encoding byte, description ("REPLAYGAIN_TRACK_GAIN"), NUL, value.
            guard let first = frame.content.first, let encoding = ID3TextEncoding(rawValue: first) else { return }
            let key = ID3Text.decode(frame.content.dropFirst(), encoding: encoding)
            guard key.terminated, ReplayGain.isKey(key.text) else { return }
            let value = ID3Text.decode(frame.content.dropFirst(1 + key.consumed), encoding: encoding).text
            var gain = tags.replayGain ?? ReplayGain()
            gain.set(key: key.text, value: value)
            tags.replayGain = gain.isEmpty ? nil : gain
        case "APIC", "PIC":
            guard !coverIsFront, let picture = ID3Picture(frame.content, legacy: frame.id == "PIC") else { return }
            if tags.coverArtBytes == nil || picture.isFrontCover {
                tags.coverArtBytes = picture.dataSize
                coverIsFront = picture.isFrontCover
            }
        default:
            break
        }
    }
}

extension ID3v2FieldCollector {
    /// ID3v2.3 writes genres as "(17)" or "(17)Rock": the text after the reference, else the
    /// reference as written (a number is not mapped to a name here).
    static func genre(_ text: String) -> String {
        guard text.hasPrefix("("), let close = text.firstIndex(of: ")") else { return text }
        let rest = text[text.index(after: close)...]
        return rest.isEmpty ? text : String(rest)
    }
}

/// The parts of an APIC (2.3/2.4) or PIC (2.2) frame that matter here: the picture type and
/// the size of the picture data after the encoding byte, MIME type (2.2: 3-character format),
/// picture type and description.
struct ID3Picture: Sendable, Equatable {
    var pictureType: UInt8
    var dataSize: Int

    var isFrontCover: Bool { pictureType == 3 }

    /// nil when the frame is malformed or holds no picture data: a broken picture frame should
    /// cost the cover, not the title and artist next to it.
    init?(_ content: ArraySlice<UInt8>, legacy: Bool) {
        var reader = ByteReader(content, component: ID3v2.component)
        guard let encodingByte = try? reader.readU8(),
              let encoding = ID3TextEncoding(rawValue: encodingByte) else { return nil }
        if legacy {
            guard (try? reader.skip(3)) != nil else { return nil }          // "JPG", "PNG"
        } else {
            // The MIME type is always Latin-1 and NUL-terminated, whatever the encoding byte says.
            let mime = ID3Text.decode(reader.rest, encoding: .latin1)
            guard mime.terminated, (try? reader.skip(mime.consumed)) != nil else { return nil }
        }
        guard let type = try? reader.readU8() else { return nil }
        let description = ID3Text.decode(reader.rest, encoding: encoding)
        guard description.terminated, (try? reader.skip(description.consumed)) != nil,
              reader.remaining > 0 else { return nil }
        pictureType = type
        dataSize = reader.remaining
    }
}
