import StreamShared
import StreamHTTP

/// Writes `/api/tracks` and `/api/search` items straight from a catalog row (the statement's
/// `LibraryStore.trackColumns`) into one byte buffer: the same text as `Catalog.trackJSON`,
/// without a `TrackRow`, a String per field or a String per item (a page of 100 tracks is
/// 57 KB; built through Strings it cost 1 ms of CPU, most of a request's).
package enum TrackJSON {
    /// A JSON array of the rows `produce` hands over (items separated by ",\n", then "]\n").
    /// `produce` calls its argument once per row; at most `limit` rows are written, and the
    /// result says whether more were offered.
    package static func array(limit: Int = .max, reserving rows: Int = 100,
                      _ produce: ((SQLiteDatabase.Statement) -> Void) throws(SQLiteError) -> Void)
        throws(SQLiteError) -> (bytes: [UInt8], more: Bool) {
        try joined(limit: limit, reserving: rows, produce) { row, out in append(row, to: &out) }
    }

    /// A JSON array of the items `produce` hands over, already written (`LibraryStore.forEachTrackJSON`):
    /// each is copied whole. Otherwise as `array(limit:reserving:_:)`.
    package static func array(items limit: Int = .max, reserving rows: Int = 100,
                      _ produce: ((UnsafeRawBufferPointer) -> Void) throws(SQLiteError) -> Void)
        throws(SQLiteError) -> (bytes: [UInt8], more: Bool) {
        try joined(limit: limit, reserving: rows, produce) { item, out in out.append(contentsOf: item) }
    }

    /// The array both forms write: "[", the first `limit` elements `write` appends, separated by
    /// ",\n", then "]\n"; `more` when `produce` offered another.
    private static func joined<Element>(limit: Int, reserving rows: Int,
                                        _ produce: ((Element) -> Void) throws(SQLiteError) -> Void,
                                        write: @escaping (Element, inout [UInt8]) -> Void)
        throws(SQLiteError) -> (bytes: [UInt8], more: Bool) {
        var out: [UInt8] = []
        out.reserveCapacity(64 + min(rows, 1000) * 600)
        out.append(UInt8(ascii: "["))
        var count = 0
        var more = false
        try produce { element in
            guard count < limit else {
                more = true
                return
            }
            if count > 0 { out.append(contentsOf: [UInt8(ascii: ","), UInt8(ascii: "\n")]) }
            write(element, &out)
            count += 1
        }
        out.append(contentsOf: [UInt8(ascii: "]"), UInt8(ascii: "\n")])
        return (out, more)
    }

    /// One item: the members of `Catalog.trackJSON`, in its order.
    package static func append(_ s: SQLiteDatabase.Statement, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        key("path", first: true, &out)
        string(s.textBytes(1), &out)
        key("url", &out)
        out.append(quote)
        out.append(contentsOf: "/media/".utf8)
        percentEncoded(s.textBytes(1), &out)
        out.append(quote)
        key("title", &out)
        optionalString(s, 5, &out)
        key("artist", &out)
        optionalString(s, 6, &out)
        key("album", &out)
        optionalString(s, 7, &out)
        key("duration_s", &out)
        out.append(contentsOf: JSONObjectWriter.number(s.double(15)).utf8)
        key("codec", &out)
        string(s.textBytes(16), &out)
        key("container", &out)
        string(s.textBytes(17), &out)
        key("sample_rate", &out)
        integer(s.int(18), &out)
        key("channels", &out)
        integer(s.int(19), &out)
        key("bitrate", &out)
        integer(s.int(20), &out)
        key("size", &out)
        integer(s.int(2), &out)
        // FileStamp.etag, `"<inode>-<size>-<mtime ns>"` in hex, as a JSON string: its quotes escaped.
        key("etag", &out)
        out.append(contentsOf: [quote, backslash, quote])
        hex(UInt64(bitPattern: Int64(s.int(4))), &out)
        out.append(UInt8(ascii: "-"))
        hex(UInt64(bitPattern: Int64(s.int(2))), &out)
        out.append(UInt8(ascii: "-"))
        hex(UInt64(max(0, s.int(3))), &out)
        out.append(contentsOf: [backslash, quote, quote])
        key("id", &out)
        integer(s.int(0), &out)
        key("album_id", &out)
        optionalInteger(s, 32, &out)
        key("artist_id", &out)
        optionalInteger(s, 31, &out)
        key("album_artist", &out)
        optionalString(s, 8, &out)
        key("track", &out)
        optionalInteger(s, 9, &out)
        key("disc", &out)
        optionalInteger(s, 11, &out)
        key("year", &out)
        optionalInteger(s, 13, &out)
        key("genre", &out)
        optionalString(s, 14, &out)
        out.append(UInt8(ascii: "}"))
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let digits = Array("0123456789abcdef".utf8)
    private static let upperHex = Array("0123456789ABCDEF".utf8)

    private static func key(_ name: StaticString, first: Bool = false, _ out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        out.append(quote)
        name.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(quote)
        out.append(UInt8(ascii: ":"))
    }

    private static func optionalString(_ s: SQLiteDatabase.Statement, _ column: Int, _ out: inout [UInt8]) {
        if s.isNull(column) {
            out.append(contentsOf: "null".utf8)
        } else {
            string(s.textBytes(column), &out)
        }
    }

    private static func optionalInteger(_ s: SQLiteDatabase.Statement, _ column: Int, _ out: inout [UInt8]) {
        if s.isNull(column) {
            out.append(contentsOf: "null".utf8)
        } else {
            integer(s.int(column), &out)
        }
    }

    /// A JSON string of UTF-8 text (the catalog writes its text from Swift strings, so it is
    /// valid UTF-8): `"`, `\` and control characters escaped as `JSONObjectWriter.quote` does,
    /// runs of plain bytes copied whole.
    static func string(_ text: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        out.append(quote)
        var start = 0
        for (i, byte) in text.enumerated() where byte < 0x20 || byte == quote || byte == backslash {
            if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<i])) }
            start = i + 1
            switch byte {
            case quote: out.append(contentsOf: [backslash, quote])
            case backslash: out.append(contentsOf: [backslash, backslash])
            case 0x0A: out.append(contentsOf: [backslash, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [backslash, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [backslash, UInt8(ascii: "t")])
            default:
                out.append(contentsOf: [backslash, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        digits[Int(byte >> 4)], digits[Int(byte & 15)]])
            }
        }
        if start < text.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: text[start...])) }
        out.append(quote)
    }

    /// `PathResolver.percentEncode` into the buffer (its unreserved bytes and `/` kept).
    package static func percentEncoded(_ path: UnsafeBufferPointer<UInt8>, _ out: inout [UInt8]) {
        for byte in path {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(upperHex[Int(byte >> 4)])
                out.append(upperHex[Int(byte & 15)])
            }
        }
    }

    /// Decimal digits of `value` (with its sign).
    package static func integer(_ value: Int, _ out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 24 bytes: a UInt64 has at most 20 digits
        withUnsafeMutableBytes(of: &buffer) { raw in
            var i = raw.count
            repeat {
                i -= 1
                raw[i] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
        }
    }

    /// Lower-case hex digits of `value`, as `String(value, radix: 16)`.
    static func hex(_ value: UInt64, _ out: inout [UInt8]) {
        var rest = value
        var buffer: (UInt64, UInt64) = (0, 0)   // 16 digits at most
        withUnsafeMutableBytes(of: &buffer) { raw in
            var i = raw.count
            repeat {
                i -= 1
                raw[i] = digits[Int(rest & 15)]
                rest >>= 4
            } while rest > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[i...]))
        }
    }
}
