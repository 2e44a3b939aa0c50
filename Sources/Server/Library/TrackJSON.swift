import StreamShared
import StreamHTTP

/// Writes `/api/tracks` and `/api/search` arrays of items straight from catalog rows (the
/// statement's `TrackRepository.columns`) into one byte buffer, through `TrackItem`'s writer:
/// the same text as `Catalog.trackJSON`, without a `Track`, a String per field or a String
/// per item (a page of 100 tracks is 57 KB; built through Strings it cost 1 ms of CPU).
package enum TrackJSON {
    /// A JSON array of the rows `produce` hands over (items separated by ",\n", then "]\n").
    /// `produce` calls its argument once per row; at most `limit` rows are written, and the
    /// result says whether more were offered.
    package static func array(limit: Int = .max, reserving rows: Int = 100,
                      _ produce: ((SQLiteDatabase.Statement) -> Void) throws(SQLiteError) -> Void)
        throws(SQLiteError) -> (bytes: [UInt8], more: Bool) {
        try joined(limit: limit, reserving: rows, produce) { row, out in append(row, to: &out) }
    }

    /// A JSON array of the items `produce` hands over, already written (`TrackRepository.forEachJSON`):
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

    /// One item, written by the shared `TrackItem` writer from the row in place.
    package static func append(_ s: SQLiteDatabase.Statement, to out: inout [UInt8]) {
        TrackItem.append(CatalogRowTrackFields(row: s), to: &out)
    }
}

/// A `TrackItemFields` reading a catalog row where SQLite keeps it (the columns of
/// `TrackRepository.columns`): no `Track`, no String per field.
struct CatalogRowTrackFields: TrackItemFields {
    let row: SQLiteDatabase.Statement

    // Always inlined: the writer asks for each member by a constant, so each call folds to its column.
    @inline(__always)
    func withText(_ member: TrackItem.TextMember, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        switch member {
        case .path: body(row.textBytes(1))
        case .url: withURL(body)
        case .title: optional(5, body)
        case .artist: optional(6, body)
        case .album: optional(7, body)
        case .codec: body(row.textBytes(16))
        case .container: body(row.textBytes(17))
        case .etag: withETag(body)
        case .albumArtist: optional(8, body)
        case .genre: optional(14, body)
        }
    }

    @inline(__always)
    func integer(_ member: TrackItem.IntegerMember) -> Int? {
        switch member {
        case .sampleRate: return row.int(18)
        case .channels: return row.int(19)
        case .bitrate: return row.int(20)
        case .size: return row.int(2)
        case .id: return row.int(0)
        case .albumID: return optionalInt(32)
        case .artistID: return optionalInt(31)
        case .trackNumber: return optionalInt(9)
        case .discNumber: return optionalInt(11)
        case .year: return optionalInt(13)
        case .bitsPerSample: return optionalInt(34)
        case .totalSamples: return row.int(22)
        case .firstFrameOffset: return row.int(23)
        case .encoderDelay: return row.int(24)
        case .encoderPadding: return row.int(25)
        }
    }

    @inline(__always)
    func number(_ member: TrackItem.NumberMember) -> Double? {
        switch member {
        case .trackGain: return optionalDouble(26)
        case .trackPeak: return optionalDouble(27)
        case .albumGain: return optionalDouble(28)
        case .albumPeak: return optionalDouble(29)
        }
    }

    private func optionalDouble(_ column: Int) -> Double? { row.isNull(column) ? nil : row.double(column) }

    var durationSeconds: Double? { row.double(15) }

    var derived: DerivedFields { DerivedFields(rawValue: row.int(33)) }

    private func optional(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        body(row.isNull(column) ? nil : row.textBytes(column))
    }

    private func optionalInt(_ column: Int) -> Int? { row.isNull(column) ? nil : row.int(column) }

    /// The row's url is its path's `/media/` URL path (`Track.url`).
    var urlIsMediaPathOfPath: Bool { true }

    private func withURL(_ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        var url = Array(APIRoutes.mediaPrefix.utf8)
        APIRoutes.appendPercentEncoded(row.textBytes(1), to: &url)
        url.withUnsafeBufferPointer { body($0) }
    }

    /// `FileStamp.etag` of the row's stamp, `"<inode>-<size>-<mtime ns>"` in hex, in a stack
    /// buffer (no String, no array: this runs for every item written).
    private func withETag(_ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        // Two quotes, three numbers of at most 16 digits, two dashes: 52 bytes.
        var buffer: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &buffer) { raw in
            var end = 0
            func put(_ byte: UInt8) {
                raw[end] = byte
                end += 1
            }
            func hex(_ value: UInt64) {
                var shift = max(0, (64 - value.leadingZeroBitCount + 3) / 4 - 1) * 4
                while shift >= 0 {
                    put(Self.hexDigits[Int((value >> UInt64(shift)) & 15)])
                    shift -= 4
                }
            }
            put(UInt8(ascii: "\""))
            hex(UInt64(bitPattern: Int64(row.int(4))))
            put(UInt8(ascii: "-"))
            hex(UInt64(bitPattern: Int64(row.int(2))))
            put(UInt8(ascii: "-"))
            hex(UInt64(max(0, row.int(3))))
            put(UInt8(ascii: "\""))
            body(UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<end]))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
