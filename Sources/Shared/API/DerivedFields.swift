/// Which members of a track or album item the catalog took from the file's path because the
/// tags said nothing for them (title from the file name, album from the folder, artist from
/// the folder above): written as `"derived": ["title", "album"]`, the item's own member names.
/// A track item may hold any of them; an album item only `title` and `artist` (its own).
public struct DerivedFields: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let title = DerivedFields(rawValue: 1)
    public static let artist = DerivedFields(rawValue: 2)
    public static let album = DerivedFields(rawValue: 4)
    public static let albumArtist = DerivedFields(rawValue: 8)
    public static let track = DerivedFields(rawValue: 16)
    public static let disc = DerivedFields(rawValue: 32)

    /// Every member with its JSON name, in the order they are written.
    public static let named: [(field: DerivedFields, name: StaticString)] = [
        (.title, "title"), (.artist, "artist"), (.album, "album"), (.albumArtist, "album_artist"),
        (.track, "track"), (.disc, "disc"),
    ]

    /// The JSON member names of the members set, in `named` order.
    public var names: [String] { Self.named.filter { contains($0.field) }.map { $0.name.description } }

    /// Appends the JSON array of `names` (`[]` when none is set).
    public func append(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        var first = true
        for (field, name) in Self.named where contains(field) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            name.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// The JSON text of `append(to:)`.
    public var json: String {
        var out: [UInt8] = []
        append(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads the `derived` member of an item: absent (a streamd from before) is none; names this
    /// reader does not know are passed over (a newer streamd may derive more).
    static func read(_ r: APIObjectReader) throws(APIDocumentError) -> DerivedFields {
        guard r.members["derived"] != nil else { return [] }
        var fields: DerivedFields = []
        for (i, value) in try r.array("derived", limit: 32).enumerated() {
            guard case .string(let name) = value else {
                throw .wrongType(member: r.name("derived") + "[\(i)]", expected: "a string")
            }
            if let known = named.first(where: { $0.name.description == name }) { fields.insert(known.field) }
        }
        return fields
    }
}
