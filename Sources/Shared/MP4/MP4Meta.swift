/// What an iTunes-style 'meta' box holds for a player: ilst tags and the iTunSMPB gapless comment.
struct MP4Meta {
    var tags = TrackTags()
    var gapless: GaplessInfo?

    /// Bytes before the first child of `meta`: 4 for ISO's full box (version/flags), 0 for
    /// QuickTime's plain box. Told apart by whether the payload opens with something that looks
    /// like a box header (a size that fits and a printable type); a full box opens with
    /// version 0 and flags 0, whose "type" bytes are the next box's size and never printable.
    static func headerSize(_ meta: MP4Box) -> Int {
        let p = meta.payload
        guard p.count >= 8 else { return min(4, p.count) }
        let s = p.startIndex
        let size = p[s..<(s + 4)].reduce(0) { $0 << 8 | Int($1) }
        let printable = p[(s + 4)..<(s + 8)].allSatisfy { (0x20...0x7E).contains($0) || $0 == 0xA9 }
        return size >= 8 && size <= p.count && printable ? 0 : 4
    }

    static func parse(_ meta: MP4Box) throws -> MP4Meta {
        var result = MP4Meta()
        var children = try meta.children(skipping: headerSize(meta))
        while let child = try children.next() {
            if child.type == "ilst" { try result.parseItemList(child) }
        }
        return result
    }

    private mutating func parseItemList(_ ilst: MP4Box) throws {
        var items = try ilst.children()
        while let item = try items.next() {
            var name: String?
            var data: (type: Int, value: ArraySlice<UInt8>)?
            var parts = try item.children()
            while let part = try parts.next() {
                switch part.type {
                case "name" where part.payload.count >= 4:           // full box: version/flags, then UTF-8
                    name = String(decoding: part.payload.dropFirst(4), as: UTF8.self)
                case "data" where part.payload.count >= 8 && data == nil:
                    // type indicator (version byte + 24-bit well-known type), locale, then the value.
                    let p = part.payload
                    let type = p[(p.startIndex + 1)..<(p.startIndex + 4)].reduce(0) { $0 << 8 | Int($1) }
                    data = (type, p.dropFirst(8))
                default:
                    break
                }
            }
            guard let data else { continue }
            switch item.type {
            case "\u{A9}nam": tags.title = tags.title ?? Self.text(data.value, type: data.type)
            case "\u{A9}ART": tags.artist = tags.artist ?? Self.text(data.value, type: data.type)
            case "\u{A9}alb": tags.album = tags.album ?? Self.text(data.value, type: data.type)
            case "trkn": tags.track = tags.track ?? Self.trackNumber(data.value)
            case "covr": tags.coverArtBytes = tags.coverArtBytes ?? data.value.count
            case "aART": tags.albumArtist = tags.albumArtist ?? Self.text(data.value, type: data.type)
            case "disk": tags.disc = tags.disc ?? Self.trackNumber(data.value)
            case "\u{A9}day": tags.date = tags.date ?? Self.text(data.value, type: data.type)
            case "\u{A9}gen": tags.genre = tags.genre ?? Self.text(data.value, type: data.type)
            case "----" where name.map(ReplayGain.isKey) == true:
                // ----:com.apple.iTunes:replaygain_track_gain and friends (any case).
                if let name, let text = Self.text(data.value, type: data.type) {
                    var gain = tags.replayGain ?? ReplayGain()
                    gain.set(key: name, value: text)
                    tags.replayGain = gain.isEmpty ? nil : gain
                }
            case "----" where name == "iTunSMPB":
                if let text = Self.text(data.value, type: data.type) { gapless = Self.parseITunSMPB(text) }
            default:
                break
            }
        }
    }

    /// Well-known type 1 is UTF-8, 2 is UTF-16BE; anything else is read as UTF-8, which is what
    /// writers that leave the type 0 mean. Trailing NULs (C-string writers) are dropped.
    static func text(_ value: ArraySlice<UInt8>, type: Int) -> String? {
        var s: String
        if type == 2 {
            var units: [UInt16] = []
            units.reserveCapacity(value.count / 2)
            var i = value.startIndex
            while i + 1 < value.endIndex {
                units.append(UInt16(value[i]) << 8 | UInt16(value[i + 1]))
                i += 2
            }
            s = String(decoding: units, as: UTF16.self)
        } else {
            s = String(decoding: value, as: UTF8.self)
        }
        while s.last == "\0" { s.removeLast() }
        return s.isEmpty ? nil : s
    }

    /// trkn: reserved(2) track(2) total(2) reserved(2) → "5" or "5/9", as TrackTags keeps it.
    static func trackNumber(_ value: ArraySlice<UInt8>) -> String? {
        let b = Array(value)
        guard b.count >= 4 else { return nil }
        let track = Int(b[2]) << 8 | Int(b[3])
        guard track > 0 else { return nil }
        let total = b.count >= 6 ? Int(b[4]) << 8 | Int(b[5]) : 0
        return total > 0 ? "\(track)/\(total)" : "\(track)"
    }

    /// " 00000000 00000840 000003C0 0000000000F34A00 …": encoder delay and padding are the
    /// second and third fields, in hex, 32 bits each (longer ones would let a player's
    /// `total - delay - padding` overflow).
    static func parseITunSMPB(_ text: String) -> GaplessInfo? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\0" })
        guard fields.count >= 3, fields[1].count <= 8, fields[2].count <= 8,
              let delay = Int(fields[1], radix: 16), let padding = Int(fields[2], radix: 16),
              delay >= 0, padding >= 0,
              fields[1].allSatisfy(\.isHexDigit), fields[2].allSatisfy(\.isHexDigit) else { return nil }
        return GaplessInfo(encoderDelay: delay, encoderPadding: padding)
    }
}
