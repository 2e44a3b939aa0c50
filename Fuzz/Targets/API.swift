@testable import StreamShared

/// The decoders of streamd's API documents as streamplay reads them (`SeekIndexDocument`,
/// `TrackItem` alone and in a list, `StatusDocument`), each tried on the whole input. What one
/// accepts stays within its limits, and its text as written reads back as the same document,
/// written again byte for byte (times are rounded to 6 decimals by the first write only).
enum APITarget {
    static func run(_ bytes: [UInt8]) {
        if let index = try? SeekIndexDocument.decode(bytes) {
            require(index.points.count <= SeekIndexDocument.maxPoints, "\(index.points.count) points")
            stable(index.encoded(), SeekIndexDocument.decode, { $0.encoded() }, "seek index")
        }
        if let items = try? TrackItem.decodeList(bytes) {
            require(items.count <= TrackItem.maxListCount, "\(items.count) items")
            let list = { (items: [TrackItem]) in "[" + items.map { $0.encoded() }.joined(separator: ",\n") + "]\n" }
            stable(list(items), TrackItem.decodeList, list, "track list")
        }
        if let item = try? TrackItem.decode(bytes) {
            stable(item.encoded(), TrackItem.decode, { $0.encoded() }, "track item")
        }
        if let status = try? StatusDocument.decode(bytes) {
            require(status.skipped.count <= StatusDocument.maxListCount, "\(status.skipped.count) skipped")
            stable(status.encoded(), StatusDocument.decode, { $0.encoded() }, "status")
        }
    }

    /// `written` (a decoded document's text) decodes, and that document writes the same text.
    private static func stable<Document>(_ written: String, _ decode: ([UInt8]) throws(APIDocumentError) -> Document,
                                         _ encode: (Document) -> String, _ name: String) {
        do {
            let again = try decode(Array(written.utf8))
            require(encode(again) == written, "\(name) written twice differs: \(written.prefix(300)) / \(encode(again).prefix(300))")
        } catch {
            require(false, "\(name) as written does not read back: \(error): \(written.prefix(300))")
        }
    }
}
