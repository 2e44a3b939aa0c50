/// A Vorbis comment block (Vorbis I §5): a vendor string and `NAME=value` fields, as FLAC's
/// VORBIS_COMMENT block, Ogg Vorbis's comment header and OpusTags carry it.
public struct VorbisComment: Sendable, Equatable {
    /// One `NAME=value` field; the name as written (compare with `sameName`).
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public var vendor: String
    public var fields: [Field]
    /// The pictures of METADATA_BLOCK_PICTURE fields that decode (base64, then a FLAC PICTURE block).
    public var pictures: [FLACPicture]

    static let component = "vorbis-comment"

    public init(vendor: String, fields: [Field], pictures: [FLACPicture] = []) {
        self.vendor = vendor
        self.fields = fields
        self.pictures = pictures
    }

    /// Parses a comment block: little-endian lengths, each checked against what is left of
    /// `bytes`, so a lying count or length throws instead of allocating. A field without '='
    /// is skipped (libvorbis writes none, some taggers do); a picture field that does not
    /// decode is dropped, the rest of the block still counts.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> VorbisComment {
        var reader = ByteReader(bytes, component: component)
        let vendorLength = Int(try reader.readU32LE())
        let vendor = String(decoding: try reader.readBytes(vendorLength), as: UTF8.self)
        let count = Int(try reader.readU32LE())
        // Each field takes at least its 4-byte length: a larger count is a lie.
        guard count <= reader.remaining / 4 else {
            throw FormatError.invalid(component: component, reason: "\(count) fields in \(reader.remaining) bytes",
                                      offset: reader.offset - 4)
        }
        var fields: [Field] = []
        var pictures: [FLACPicture] = []
        for _ in 0..<count {
            let length = Int(try reader.readU32LE())
            let raw = try reader.readBytes(length)
            guard let equals = raw.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let name = String(decoding: raw[raw.startIndex..<equals], as: UTF8.self)
            let valueBytes = raw[(equals + 1)...]
            if Self.sameName(name, "METADATA_BLOCK_PICTURE") {
                if let block = Base64.decode(valueBytes), let picture = try? FLACPicture.parse(block[...]) {
                    pictures.append(picture)
                }
                continue
            }
            fields.append(Field(name: name, value: String(decoding: valueBytes, as: UTF8.self)))
        }
        return VorbisComment(vendor: vendor, fields: fields, pictures: pictures)
    }

    /// The comment block's bytes (no framing bit): the vendor, then the fields, then each picture
    /// as a METADATA_BLOCK_PICTURE field (base64 of its FLAC PICTURE block), as `parse` reads them.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        func appendU32(_ value: Int) {
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: UInt32(clamping: value) >> (8 * UInt32(i)))) }
        }
        let vendorBytes = Array(vendor.utf8)
        appendU32(vendorBytes.count)
        out += vendorBytes
        appendU32(fields.count + pictures.count)
        for field in fields {
            let text = Array(field.name.utf8) + [UInt8(ascii: "=")] + Array(field.value.utf8)
            appendU32(text.count)
            out += text
        }
        for picture in pictures {
            let text = Array("METADATA_BLOCK_PICTURE=".utf8) + Array(Base64.encode(picture.bytes).utf8)
            appendU32(text.count)
            out += text
        }
        return out
    }

    /// The first value of field `name` (any case), nil when absent or empty.
    public func value(_ name: String) -> String? {
        fields.first { Self.sameName($0.name, name) && !$0.value.isEmpty }?.value
    }

    /// Field names compared as Vorbis I §5.2.3 says, ASCII case ignored, without making an
    /// upper-cased copy of each (`tags` asks for fifteen names, each compared with every field).
    public static func sameName(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                guard x.count == y.count else { return false }
                for i in 0..<x.count where x[i] != y[i] {
                    let lower = x[i] | 0x20
                    guard lower == y[i] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
    }

    /// R128_TRACK_GAIN in dB (the field is a Q7.8 integer, 1/256 dB, relative to -23 LUFS; RFC 7845 §5.2.1).
    public var r128TrackGain: Double? { Self.q78(value("R128_TRACK_GAIN")) }
    /// R128_ALBUM_GAIN in dB.
    public var r128AlbumGain: Double? { Self.q78(value("R128_ALBUM_GAIN")) }

    static func q78(_ text: String?) -> Double? {
        guard let text, text.count <= 7, let value = Int(text), (-32768...32767).contains(value) else { return nil }
        return Double(value) / 256
    }

    /// The fields `TrackTags` keeps. ReplayGain comes from REPLAYGAIN_*; without it, from
    /// R128_* moved from -23 LUFS to ReplayGain's -18 LUFS reference (+5 dB).
    public var tags: TrackTags {
        var tags = TrackTags(title: value("TITLE"), artist: value("ARTIST"), album: value("ALBUM"),
                             track: value("TRACKNUMBER"), albumArtist: value("ALBUMARTIST") ?? value("ALBUM ARTIST"),
                             disc: value("DISCNUMBER"), date: value("DATE") ?? value("YEAR"), genre: value("GENRE"))
        // "3" with TRACKTOTAL "12" reads as the "3/12" other formats write.
        if let track = tags.track, !track.contains("/"), let total = value("TRACKTOTAL") ?? value("TOTALTRACKS") {
            tags.track = "\(track)/\(total)"
        }
        if let disc = tags.disc, !disc.contains("/"), let total = value("DISCTOTAL") ?? value("TOTALDISCS") {
            tags.disc = "\(disc)/\(total)"
        }
        var gain = ReplayGain()
        for field in fields { gain.set(key: field.name, value: field.value) }
        if gain.trackGain == nil, let r128 = r128TrackGain { gain.trackGain = r128 + 5 }
        if gain.albumGain == nil, let r128 = r128AlbumGain { gain.albumGain = r128 + 5 }
        tags.replayGain = gain.isEmpty ? nil : gain
        tags.coverArtBytes = FLACPicture.cover(pictures)?.data.count
        return tags
    }
}
