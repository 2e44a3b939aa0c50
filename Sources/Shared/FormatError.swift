/// Why a run of bytes could not be read as the format a parser expected.
///
/// StreamShared parsers follow one rule: a thrown `FormatError` means "these bytes are
/// wrong (or end too early)", a `nil` result means "give me more bytes".
public enum FormatError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A read needed `needed` bytes at `offset` but the input ended first.
    case truncated(component: String, offset: Int, needed: Int)
    /// A field holds a value the format does not allow.
    case invalid(component: String, reason: String, offset: Int)
    /// The bytes are well-formed but use a feature this project does not handle.
    case unsupported(component: String, reason: String)
    /// The bytes are not audio at all (HTML, JSON, empty, ...).
    case notAudio(reason: String)
    /// A value read from the input, or computed from such values, lies beyond what the format
    /// or `InputLimits` allows (a week of audio, 2^40 bytes, an overflow). `field` names it the
    /// way the format does ("mdhd.timescale", "stts.sample_delta", "xing.frames").
    case outOfRange(component: String, field: String, value: String)

    public var description: String {
        switch self {
        case let .truncated(component, offset, needed):
            return "\(component): truncated input (needed \(needed) bytes at offset \(offset))"
        case let .invalid(component, reason, offset):
            return "\(component): \(reason) (at offset \(offset))"
        case let .unsupported(component, reason):
            return "\(component): unsupported: \(reason)"
        case let .notAudio(reason):
            return "parser: not an audio stream (\(reason))"
        case let .outOfRange(component, field, value):
            return "\(component): \(field) out of range (\(value))"
        }
    }

    /// True when more bytes could turn this error into a result.
    public var isTruncation: Bool {
        if case .truncated = self { return true }
        return false
    }
}
