/// Turns a playlist's bytes into lines of text: byte order marks (UTF-8, UTF-16 LE/BE), UTF-8
/// validation with the Windows-1252 fallback, LF, CRLF and lone CR line ends, and the size,
/// line-length and NUL checks every playlist format needs.
enum PlaylistText {
    /// One line of text and its 1-based number.
    struct Line {
        var number: Int
        var text: Substring
    }

    static func lines(_ input: ArraySlice<UInt8>, encoding: PlaylistTextEncoding,
                      limits: PlaylistLimits) throws(PlaylistError) -> [Line] {
        guard input.count <= limits.maxBytes else { throw .tooLarge(bytes: input.count, limit: limits.maxBytes) }
        var bytes = input
        var strictUTF8 = encoding == .utf8
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            bytes = bytes.dropFirst(3)
            strictUTF8 = true                       // the mark says what the text is
        } else if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            bytes = try utf8(fromUTF16: bytes.dropFirst(2), littleEndian: bytes.first == 0xFF)[...]
            strictUTF8 = true
        }
        if let nul = bytes.firstIndex(of: 0) {
            throw .notText(reason: "NUL byte at offset \(nul - input.startIndex)")
        }
        let validUTF8 = String(validating: bytes, as: UTF8.self) != nil
        var lines: [Line] = []
        var number = 0
        var start = bytes.startIndex
        while start < bytes.endIndex {
            number += 1
            let end = bytes[start...].firstIndex { $0 == 0x0A || $0 == 0x0D } ?? bytes.endIndex
            let raw = bytes[start..<end]
            guard raw.count <= limits.maxLineLength else { throw .lineTooLong(line: number, limit: limits.maxLineLength) }
            let text: String
            if validUTF8 {
                text = String(decoding: raw, as: UTF8.self)
            } else if strictUTF8 {
                guard let valid = String(validating: raw, as: UTF8.self) else { throw .invalidUTF8(line: number) }
                text = valid
            } else {
                text = String(validating: raw, as: UTF8.self) ?? decodeWindows1252(raw)
            }
            lines.append(Line(number: number, text: trimmed(text[...])))
            // CRLF is one line end; a lone CR (classic Mac OS) is one too.
            var next = end
            if next < bytes.endIndex {
                next += bytes[next] == 0x0D && next + 1 < bytes.endIndex && bytes[next + 1] == 0x0A ? 2 : 1
            }
            start = next
        }
        return lines
    }

    /// UTF-16 (after its byte order mark) re-encoded as UTF-8.
    static func utf8(fromUTF16 bytes: ArraySlice<UInt8>, littleEndian: Bool) throws(PlaylistError) -> [UInt8] {
        guard bytes.count % 2 == 0 else { throw .notText(reason: "UTF-16 text of an odd byte count") }
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let a = UInt16(bytes[i]), b = UInt16(bytes[i + 1])
            units.append(littleEndian ? a | b << 8 : a << 8 | b)
            i += 2
        }
        guard let text = String(validating: units, as: UTF16.self) else {
            throw .notText(reason: "invalid UTF-16 (an unpaired surrogate)")
        }
        return Array(text.utf8)
    }

    /// Windows-1252: Latin-1, except that 0x80-0x9F hold the characters Windows puts there
    /// (C1 control codes never occur in a playlist; the five unassigned bytes stay as Latin-1).
    static func decodeWindows1252(_ bytes: ArraySlice<UInt8>) -> String {
        var text = ""
        text.unicodeScalars.reserveCapacity(bytes.count)
        for byte in bytes {
            if byte >= 0x80 && byte <= 0x9F, let scalar = Unicode.Scalar(windows1252C1[Int(byte - 0x80)]) {
                text.unicodeScalars.append(scalar)
            } else {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        return text
    }

    /// Code points of Windows-1252 bytes 0x80...0x9F (0x81, 0x8D, 0x8F, 0x90 and 0x9D are unassigned).
    static let windows1252C1: [UInt32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
        0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ]

    /// The text without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> Substring {
        var s = text
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return s
    }
}
