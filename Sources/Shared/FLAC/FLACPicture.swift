/// A FLAC PICTURE metadata block (RFC 9639 §8.8), also carried base64-coded in the
/// METADATA_BLOCK_PICTURE field of Ogg Vorbis comments.
public struct FLACPicture: Sendable, Equatable {
    /// The ID3v2 APIC picture type: 3 is the front cover.
    public var pictureType: UInt32
    public var mimeType: String
    public var description: String
    public var width: UInt32
    public var height: UInt32
    public var colorDepth: UInt32
    public var colorCount: UInt32
    public var data: [UInt8]

    static let component = "flac-picture"

    /// Parses a PICTURE block body; every length must fit inside `bytes`.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(FormatError) -> FLACPicture {
        var reader = ByteReader(bytes, component: component)
        let type = try reader.readU32BE()
        let mimeLength = Int(try reader.readU32BE())
        let mime = try reader.readBytes(mimeLength)
        guard mime.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw FormatError.invalid(component: component, reason: "media type is not printable ASCII", offset: 8)
        }
        let descriptionLength = Int(try reader.readU32BE())
        let description = try reader.readBytes(descriptionLength)
        let width = try reader.readU32BE(), height = try reader.readU32BE()
        let depth = try reader.readU32BE(), colors = try reader.readU32BE()
        let dataLength = Int(try reader.readU32BE())
        let data = try reader.readBytes(dataLength)
        return FLACPicture(pictureType: type, mimeType: String(decoding: mime, as: UTF8.self),
                           description: String(decoding: description, as: UTF8.self),
                           width: width, height: height, colorDepth: depth, colorCount: colors, data: Array(data))
    }

    /// The picture as the tag readers hand it on (type guessed from the bytes when the block says nothing useful).
    public var embedded: EmbeddedPicture {
        EmbeddedPicture(mimeType: EmbeddedPictureReader.mimeType(declared: mimeType, data: data[...]), data: data)
    }

    /// The front cover among `pictures`, else the first one.
    public static func cover(_ pictures: [FLACPicture]) -> FLACPicture? {
        pictures.first { $0.pictureType == 3 } ?? pictures.first
    }
}

/// Base64 (RFC 4648, standard alphabet) as Vorbis comments carry pictures: padding optional,
/// line breaks and spaces ignored, anything else refused.
enum Base64 {
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var accumulator: UInt32 = 0, bits = 0, padding = 0
        for c in text {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="): padding += 1; continue
            case 0x0A, 0x0D, 0x20: continue
            default: return nil
            }
            guard padding == 0 else { return nil }   // data after padding
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard padding <= 2, bits < 6 else { return nil }   // a lone 6-bit group is no byte
        return out
    }
}
