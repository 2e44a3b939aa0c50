/// A `--channel NAME=PATH[,shuffle]` option taken apart.
public struct ChannelSpec: Sendable, Equatable {
    public var name: String
    public var path: String
    public var shuffle: Bool

    /// Why a `--channel` value is refused.
    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case malformed(String)
        public var description: String {
            switch self {
            case .malformed(let why): return "--channel: \(why)"
            }
        }
    }

    /// Parses `NAME=PATH[,shuffle]`. A PATH holding commas keeps them unless the last part is
    /// a known option.
    public static func parse(_ text: String) throws(ParseError) -> ChannelSpec {
        guard let equals = text.firstIndex(of: "=") else { throw .malformed("expected NAME=PATH, got '\(text)'") }
        let name = String(text[..<equals])
        guard RadioChannel.isValidName(name) else {
            throw .malformed("channel name '\(name)': use letters, digits, '-', '_' and '.'")
        }
        var path = String(text[text.index(after: equals)...])
        var shuffle = false
        if path.hasSuffix(",shuffle") {
            shuffle = true
            path.removeLast(",shuffle".count)
        }
        guard !path.isEmpty else { throw .malformed("channel '\(name)' has no PATH") }
        return ChannelSpec(name: name, path: path, shuffle: shuffle)
    }
}

/// A `NAME=OTHER` pair (`--fallback`).
public struct ChannelPair: Sendable, Equatable {
    public var name: String
    public var other: String

    public static func parse(_ text: String, option: String) throws(ChannelSpec.ParseError) -> ChannelPair {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, RadioChannel.isValidName(parts[0]), RadioChannel.isValidName(parts[1]),
              parts[0] != parts[1] else {
            throw .malformed("\(option) takes NAME=OTHER with two different channel names, got '\(text)'")
        }
        return ChannelPair(name: parts[0], other: parts[1])
    }
}
