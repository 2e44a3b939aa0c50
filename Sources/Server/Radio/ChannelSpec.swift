import StreamHTTP
import StreamLibrary
import StreamHLS
/// A `--channel NAME=PATH[,shuffle][,bitrate=KBPS][,private]` option taken apart.
public struct ChannelSpec: Sendable, Equatable {
    public var name: String
    public var path: String
    public var shuffle: Bool
    /// `bitrate=KBPS`: the MP3 bitrate when the channel transcodes (nil: 128, and tracks of one
    /// format pass through as they are; given: the channel always transcodes to it).
    public var bitrate: Int?
    /// `private`: listeners must log in once accounts exist (channels are public by default).
    public var isPrivate = false

    public init(name: String, path: String, shuffle: Bool = false, bitrate: Int? = nil) {
        self.name = name
        self.path = path
        self.shuffle = shuffle
        self.bitrate = bitrate
    }

    /// The MP3 bitrate of a transcoding channel when `bitrate=` is not given.
    public static let defaultBitrate = 128

    /// Why a `--channel` value is refused.
    public enum ParseError: Error, CustomStringConvertible, Equatable {
        case malformed(String)
        public var description: String {
            switch self {
            case .malformed(let why): return "--channel: \(why)"
            }
        }
    }

    /// Parses `NAME=PATH[,shuffle][,bitrate=KBPS]` (the options in any order). A PATH holding
    /// commas keeps them unless the last parts are known options.
    public static func parse(_ text: String) throws(ParseError) -> ChannelSpec {
        guard let equals = text.firstIndex(of: "=") else { throw .malformed("expected NAME=PATH, got '\(text)'") }
        let name = String(text[..<equals])
        guard RadioChannel.isValidName(name) else {
            throw .malformed("channel name '\(name)': use letters, digits, '-', '_' and '.'")
        }
        var path = String(text[text.index(after: equals)...])
        var shuffle = false
        var bitrate: Int?
        var isPrivate = false
        while let comma = path.lastIndex(of: ",") {
            let option = path[path.index(after: comma)...]
            if option == "shuffle" {
                shuffle = true
            } else if option == "private" {
                isPrivate = true
            } else if option.hasPrefix("bitrate=") {
                let value = option.dropFirst("bitrate=".count)
                guard value.count <= 3, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let kbps = Int(value),
                      (8...320).contains(kbps) else {
                    throw .malformed("channel '\(name)': bitrate takes kbit/s from 8 to 320, got '\(value)'")
                }
                bitrate = kbps
            } else {
                break
            }
            path = String(path[..<comma])
        }
        guard !path.isEmpty else { throw .malformed("channel '\(name)' has no PATH") }
        var spec = ChannelSpec(name: name, path: path, shuffle: shuffle, bitrate: bitrate)
        spec.isPrivate = isPrivate
        return spec
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
