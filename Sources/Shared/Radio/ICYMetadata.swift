/// ICY (SHOUTcast/Icecast) in-band metadata: a block sent after every `icy-metaint` audio bytes,
/// one length byte L then L × 16 bytes of `Key='value';` text padded with NULs. L = 0 means
/// "unchanged". Encoding and decoding of one block; `ICYStreamReader` splits a whole stream.
public enum ICYMetadata {
    /// Largest text a block can carry (the length byte counts 16-byte units).
    public static let maxTextBytes = 255 * 16

    /// The block for `StreamTitle='title';` (and `StreamUrl` when given). Text that does not fit
    /// is cut at a UTF-8 character boundary; a `'` followed by `;` inside the title would end the
    /// value early for every client, so such pairs lose the quote.
    public static func encode(title: String, url: String? = nil) -> [UInt8] {
        var fields: [(String, String)] = [("StreamTitle", title)]
        if let url { fields.append(("StreamUrl", url)) }
        return encode(fields: fields)
    }

    /// A block of `Key='value';` pairs in order.
    public static func encode(fields: [(String, String)]) -> [UInt8] {
        var text: [UInt8] = []
        for (key, value) in fields {
            let cleaned = cleanedValue(value)
            let prefix = Array(key.utf8) + Array("='".utf8)
            let suffix = Array("';".utf8)
            let room = maxTextBytes - text.count - prefix.count - suffix.count
            guard room >= 0 else { break }
            text += prefix + truncatedUTF8(cleaned, to: room) + suffix
        }
        let units = (text.count + 15) / 16
        var block = [UInt8(units)]
        block += text
        block += [UInt8](repeating: 0, count: units * 16 - text.count)
        return block
    }

    /// The "nothing changed" block.
    public static let empty: [UInt8] = [0]

    /// The UTF-8 of a value as a block may carry it: without NULs (they would end the text) and
    /// without the quotes before every `;` (`'';` too), so it cannot end the value early. Done on
    /// bytes, as readers scan them: on Characters, a `;` that a combining mark follows is another
    /// Character, and its `';` went through (found by the fuzzer).
    static func cleanedValue(_ value: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 where byte != 0 {
            if byte == UInt8(ascii: ";") {
                while out.last == UInt8(ascii: "'") { out.removeLast() }
            }
            out.append(byte)
        }
        return out
    }

    /// Cuts UTF-8 bytes to at most `limit` without splitting a character.
    static func truncatedUTF8(_ bytes: [UInt8], to limit: Int) -> [UInt8] {
        guard bytes.count > limit else { return bytes }
        var end = max(0, limit)
        // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
        while end > 0, end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[0..<end])
    }

    /// The fields of a block's text (without its length byte): `Key='value';` pairs; NUL padding
    /// ends the text. A value runs to the next `';` (titles may hold quotes). Throws
    /// `FormatError` for text that is not pairs of that shape.
    public static func decode(text: ArraySlice<UInt8>) throws -> [(key: String, value: String)] {
        let end = text.firstIndex(of: 0) ?? text.endIndex
        var rest = text[text.startIndex..<end]
        var fields: [(key: String, value: String)] = []
        while let first = rest.first, first != 0 {
            if first == UInt8(ascii: " ") || first == UInt8(ascii: "\r") || first == UInt8(ascii: "\n") {
                rest = rest.dropFirst()
                continue
            }
            guard let equals = rest.firstIndex(of: UInt8(ascii: "=")) else {
                throw FormatError.invalid(component: "icy", reason: "metadata field without '='", offset: rest.startIndex - text.startIndex)
            }
            let key = rest[rest.startIndex..<equals]
            guard !key.isEmpty, key.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "'") }) else {
                throw FormatError.invalid(component: "icy", reason: "bad metadata key", offset: rest.startIndex - text.startIndex)
            }
            let afterEquals = rest[(equals + 1)...]
            guard afterEquals.first == UInt8(ascii: "'") else {
                throw FormatError.invalid(component: "icy", reason: "metadata value not quoted", offset: equals + 1 - text.startIndex)
            }
            let valueStart = afterEquals.startIndex + 1
            var index = valueStart
            var valueEnd: Int?
            while index + 1 < afterEquals.endIndex {
                if afterEquals[index] == UInt8(ascii: "'") && afterEquals[index + 1] == UInt8(ascii: ";") {
                    valueEnd = index
                    break
                }
                index += 1
            }
            // The last value may end with a bare quote (some servers drop the final ';').
            if valueEnd == nil, afterEquals.last == UInt8(ascii: "'"), afterEquals.endIndex - 1 >= valueStart {
                valueEnd = afterEquals.endIndex - 1
            }
            guard let stop = valueEnd else {
                throw FormatError.invalid(component: "icy", reason: "unterminated metadata value", offset: valueStart - text.startIndex)
            }
            fields.append((String(decoding: key, as: UTF8.self), String(decoding: afterEquals[valueStart..<stop], as: UTF8.self)))
            rest = afterEquals[min(stop + 2, afterEquals.endIndex)...]
        }
        return fields
    }

    /// The `StreamTitle` of a block's text, if any.
    public static func title(in text: ArraySlice<UInt8>) throws -> String? {
        try decode(text: text).first { $0.key == "StreamTitle" }?.value
    }
}
