/// Why an ICY listener stream cannot be read: the server's lengths do not match its stream.
public enum ICYStreamError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `icy-metaint` header is not a byte count in 1...16 MiB.
    case badMetaint(String)
    /// The bytes where a metadata block should be are not metadata (control bytes, or text after
    /// the NUL padding): `icy-metaint` or the block's length byte lies, and audio would be read as
    /// metadata or metadata played as audio. `audioOffset` counts the audio bytes before it.
    case notMetadata(audioOffset: Int, reason: String)

    public var description: String {
        switch self {
        case let .badMetaint(value):
            return "icy: icy-metaint '\(value.prefix(40))' is not a byte count in 1...\(ICYStreamReader.maxMetaint)"
        case let .notMetadata(offset, reason):
            return "icy: the metadata block after audio byte \(offset) is not metadata (\(reason)); "
                + "the server's icy-metaint does not match its stream"
        }
    }
}

/// The receiving side of ICY metadata (streamplay, and streamd's relay reading its upstream):
/// takes a listener stream that carries a metadata block after every `metaint` audio bytes,
/// hands the audio on (slices of the input, no copy) and returns each block's fields with the
/// audio offset they take effect at. Every block is checked, so a length that lies is a typed
/// error instead of audio read as titles, and at most one block (4,080 bytes) is held. Feed it
/// bytes in any pieces.
public struct ICYStreamReader: Sendable {
    /// Largest `icy-metaint` taken (Icecast uses 16,000, SHOUTcast 8,192 to 32,768).
    public static let maxMetaint = 1 << 24

    public let metaint: Int
    /// Audio bytes handed on so far.
    public private(set) var audioBytes = 0
    /// Audio bytes left before the next block's length byte.
    private var untilBlock: Int
    /// The block being read: its length (after the length byte) and the bytes so far.
    private var blockLength: Int?
    private var block: [UInt8] = []

    /// A metadata block that changed something (a length byte of 0 says "unchanged" and gives none).
    public struct Update: Sendable, Equatable {
        /// Audio bytes before the block: the new fields apply from there.
        public var audioOffset: Int
        /// `StreamTitle`, when the block has one (an empty title is a title too).
        public var title: String?
        /// Every `Key='value'` pair, in order; empty when the text is not in that shape.
        public var fields: [Field]
        /// The text, when it is printable but not `Key='value';` pairs (it changes no title).
        public var unparsedText: String?

        public init(audioOffset: Int, title: String?, fields: [Field], unparsedText: String?) {
            self.audioOffset = audioOffset
            self.title = title
            self.fields = fields
            self.unparsedText = unparsedText
        }
    }

    /// One `Key='value'` pair of a block.
    public struct Field: Sendable, Equatable {
        public var key: String
        public var value: String

        public init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// The `icy-metaint` header's value as a byte count; throws `.badMetaint` for anything but
    /// digits in 1...`maxMetaint`.
    public static func metaint(header value: some StringProtocol) throws(ICYStreamError) -> Int {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var digits = Substring(value).utf8[...]
        while let first = digits.first, isSpace(first) { digits = digits.dropFirst() }
        while let last = digits.last, isSpace(last) { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let number = Int(String(decoding: digits, as: UTF8.self)), (1...maxMetaint).contains(number) else {
            throw .badMetaint(String(value))
        }
        return number
    }

    public init(metaint: Int) throws(ICYStreamError) {
        guard (1...Self.maxMetaint).contains(metaint) else { throw .badMetaint(String(metaint)) }
        self.metaint = metaint
        untilBlock = metaint
    }

    /// True between a block's length byte and its last byte (a stream that ends here was cut).
    public var isInsideBlock: Bool { blockLength != nil }

    /// Reads `bytes`: audio goes to `audio` in order, and each block that says something to
    /// `update` at its place in the stream (after the audio before it). Throws when a block is
    /// not metadata; the reader is then unusable (the stream is out of step).
    public mutating func feed(_ bytes: ArraySlice<UInt8>, audio: (ArraySlice<UInt8>) -> Void,
                              update: (Update) -> Void) throws(ICYStreamError) {
        var rest = bytes
        while !rest.isEmpty {
            if untilBlock > 0 {
                let n = min(untilBlock, rest.count)
                audio(rest.prefix(n))
                rest = rest.dropFirst(n)
                untilBlock -= n
                audioBytes += n
                continue
            }
            guard let length = blockLength else {
                let units = Int(rest[rest.startIndex])
                rest = rest.dropFirst()
                if units == 0 {
                    untilBlock = metaint
                } else {
                    blockLength = units * 16
                    block.removeAll(keepingCapacity: true)
                }
                continue
            }
            let n = min(length - block.count, rest.count)
            block += rest.prefix(n)
            rest = rest.dropFirst(n)
            guard block.count == length else { continue }
            update(try Self.read(block: block[...], audioOffset: audioBytes))
            blockLength = nil
            untilBlock = metaint
        }
    }

    /// A whole block's text (NUL padding included) as an update; throws when it is not metadata.
    static func read(block: ArraySlice<UInt8>, audioOffset: Int) throws(ICYStreamError) -> Update {
        let end = block.firstIndex(of: 0) ?? block.endIndex
        let text = block[block.startIndex..<end]
        if let stray = block[end...].firstIndex(where: { $0 != 0 }) {
            throw .notMetadata(audioOffset: audioOffset, reason: "byte \(stray - block.startIndex) of \(block.count) follows the NUL padding")
        }
        // Tab, CR and LF are seen between pairs; any other control byte is not text.
        if let control = text.firstIndex(where: { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }) {
            throw .notMetadata(audioOffset: audioOffset, reason: "control byte 0x\(String(block[control], radix: 16)) at byte \(control - block.startIndex)")
        }
        // SHOUTcast servers often send Windows-1252/Latin-1 titles: bytes that are not UTF-8
        // are taken as Latin-1, so a title never turns into replacement characters.
        let utf8 = String(validating: text, as: UTF8.self) == nil ? latin1ToUTF8(text) : Array(text)
        guard let pairs = try? ICYMetadata.decode(text: utf8[...]) else {
            return Update(audioOffset: audioOffset, title: nil, fields: [],
                          unparsedText: String(decoding: utf8.prefix(200), as: UTF8.self))
        }
        let fields = pairs.map { Field(key: $0.key, value: $0.value) }
        return Update(audioOffset: audioOffset, title: fields.first { $0.key == "StreamTitle" }?.value, fields: fields,
                      unparsedText: nil)
    }

    /// Latin-1 bytes as UTF-8 (each byte is the code point of the same value).
    static func latin1ToUTF8(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            if byte < 0x80 {
                out.append(byte)
            } else {
                out.append(0xC0 | byte >> 6)
                out.append(0x80 | byte & 0x3F)
            }
        }
        return out
    }
}
