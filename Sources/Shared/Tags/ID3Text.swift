/// The four text encodings an ID3v2 frame can declare in its first byte.
enum ID3TextEncoding: UInt8, Sendable {
    case latin1 = 0
    /// UTF-16 with a byte order mark (2.2 and 2.3 call it "Unicode").
    case utf16WithBOM = 1
    /// UTF-16 big-endian without a byte order mark (2.4 only, but harmless to accept everywhere);
    /// a mark that is there anyway still decides the byte order.
    case utf16BigEndian = 2
    case utf8 = 3

    /// A NUL terminator is one zero byte, or one zero code unit (two bytes) for UTF-16.
    var terminatorLength: Int {
        switch self {
        case .latin1, .utf8: return 1
        case .utf16WithBOM, .utf16BigEndian: return 2
        }
    }
}

/// One string decoded from ID3 bytes, and how far it reached.
struct ID3DecodedString: Sendable, Equatable {
    var text: String
    /// Bytes used, the terminator included when there is one.
    var consumed: Int
    /// False when the data ended before a terminator (normal for the last value of a text frame).
    var terminated: Bool
}

/// Decodes ID3 text without Foundation: Latin-1, UTF-16 (either byte order) and UTF-8.
enum ID3Text {
    /// The text of a text-information frame (TIT2, TPE1, TT2, ...): an encoding byte, then one
    /// or more NUL-separated values. The first value is returned (2.4 allows several; 2.3 writers
    /// often leave a trailing NUL), nil when it is empty or the encoding byte is unknown.
    static func frameValue(_ data: ArraySlice<UInt8>) -> String? {
        guard let first = data.first, let encoding = ID3TextEncoding(rawValue: first) else { return nil }
        let value = decode(data.dropFirst(), encoding: encoding).text
        return value.isEmpty ? nil : value
    }

    /// Decodes one string from the start of `data`, up to its terminator or the end of `data`.
    static func decode(_ data: ArraySlice<UInt8>, encoding: ID3TextEncoding) -> ID3DecodedString {
        let unit = encoding.terminatorLength
        // The terminator must sit on a code-unit boundary: "é" in UTF-16LE is E9 00, not a NUL.
        var end = data.endIndex
        var index = data.startIndex
        while index + unit <= data.endIndex {
            if data[index] == 0 && (unit == 1 || data[index + 1] == 0) {
                end = index
                break
            }
            index += unit
        }
        let terminated = end != data.endIndex
        let consumed = terminated ? end - data.startIndex + unit : data.count
        let raw = data[data.startIndex..<end]
        let text: String
        switch encoding {
        case .latin1:
            // Every ISO-8859-1 byte is the Unicode code point of the same value.
            text = String(String.UnicodeScalarView(raw.map { Unicode.Scalar($0) }))
        case .utf8:
            // Some writers put a UTF-8 byte order mark in front; it is not part of the text.
            let hasBOM = raw.count >= 3 && raw[raw.startIndex] == 0xEF
                && raw[raw.startIndex + 1] == 0xBB && raw[raw.startIndex + 2] == 0xBF
            text = String(decoding: hasBOM ? raw.dropFirst(3) : raw, as: UTF8.self)
        case .utf16WithBOM:
            text = utf16(raw, assumeBigEndian: nil)
        case .utf16BigEndian:
            text = utf16(raw, assumeBigEndian: true)
        }
        return ID3DecodedString(text: text, consumed: consumed, terminated: terminated)
    }

    /// Decodes UTF-16 bytes. A byte order mark, when there is one, decides the byte order and
    /// is dropped, whatever the encoding byte said: encoding 2 promises big-endian without a
    /// mark, but writers that put one there (either way round) mean it. Without a mark,
    /// `assumeBigEndian` decides, or, when nil (encoding 1 with its mark missing), a guess.
    private static func utf16(_ raw: ArraySlice<UInt8>, assumeBigEndian: Bool?) -> String {
        var bytes = raw
        let isBigEndian: Bool
        if let markSaysBigEndian = byteOrderMark(bytes) {
            isBigEndian = markSaysBigEndian
            bytes = bytes.dropFirst(2)
        } else {
            // Guess from where the zero bytes of Latin text sit (high bytes first means
            // big-endian); little-endian otherwise, as the Windows taggers that forget it write.
            isBigEndian = assumeBigEndian ?? zeroBytesLeadPairs(bytes)
        }
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            let a = UInt16(bytes[index]), b = UInt16(bytes[index + 1])
            units.append(isBigEndian ? a << 8 | b : b << 8 | a)
            index += 2
        }
        // An odd trailing byte cannot be a code unit; it is dropped. Unpaired surrogates
        // become U+FFFD rather than failing the whole tag.
        return String(decoding: units, as: UTF16.self)
    }

    /// True for FE FF (big-endian), false for FF FE (little-endian), nil when neither opens `bytes`.
    private static func byteOrderMark(_ bytes: ArraySlice<UInt8>) -> Bool? {
        guard bytes.count >= 2 else { return nil }
        switch (bytes[bytes.startIndex], bytes[bytes.startIndex + 1]) {
        case (0xFE, 0xFF): return true
        case (0xFF, 0xFE): return false
        default: return nil
        }
    }

    /// True when zero bytes sit more often at the first position of each byte pair.
    private static func zeroBytesLeadPairs(_ bytes: ArraySlice<UInt8>) -> Bool {
        var leading = 0, trailing = 0
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            if bytes[index] == 0 { leading += 1 }
            if bytes[index + 1] == 0 { trailing += 1 }
            index += 2
        }
        return leading > trailing
    }
}
