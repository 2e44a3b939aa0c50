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

    public init(pictureType: UInt32, mimeType: String, description: String = "", width: UInt32 = 0, height: UInt32 = 0,
                colorDepth: UInt32 = 0, colorCount: UInt32 = 0, data: [UInt8]) {
        self.pictureType = pictureType
        self.mimeType = mimeType
        self.description = description
        self.width = width
        self.height = height
        self.colorDepth = colorDepth
        self.colorCount = colorCount
        self.data = data
    }

    /// The PICTURE block body `parse` reads: big-endian lengths and sizes (0 for a size not known).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        func appendU32(_ value: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) } }
        let mime = Array(mimeType.utf8), text = Array(description.utf8)
        appendU32(pictureType)
        appendU32(UInt32(clamping: mime.count))
        out += mime
        appendU32(UInt32(clamping: text.count))
        out += text
        for value in [width, height, colorDepth, colorCount] { appendU32(value) }
        appendU32(UInt32(clamping: data.count))
        out += data
        return out
    }

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
