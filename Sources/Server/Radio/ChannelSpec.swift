import StreamHTTP
import StreamLibrary
import StreamHLS
/// A `--channel NAME=PATH[,shuffle][,format=opus|mp3][,bitrate=KBPS|,passthrough][,private]` option taken apart.
public struct ChannelSpec: Sendable, Equatable {
    public var name: String
    public var path: String
    public var shuffle: Bool
    /// `bitrate=KBPS`: the bitrate when the channel transcodes (nil: 128, and tracks of one
    /// format pass through as they are; given: the channel always transcodes to it).
    public var bitrate: Int?
    /// `format=opus|mp3`: the channel always encodes its tracks to this (Opus: a chained Ogg
    /// stream, one link per track); nil: MP3 when it transcodes at all.
    public var format: TranscodeFormat?
    /// `passthrough`: the tracks go out as they are or the channel does not start (one codec:
    /// Ogg Opus or Vorbis as a chained Ogg stream, or MP3/ADTS of one format), never transcoded.
    public var passthrough: Bool
    /// `private`: listeners must log in once accounts exist (channels are public by default).
    public var isPrivate = false

    public init(name: String, path: String, shuffle: Bool = false, bitrate: Int? = nil, passthrough: Bool = false) {
        self.name = name
        self.path = path
        self.shuffle = shuffle
        self.bitrate = bitrate
        self.passthrough = passthrough
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

    /// Parses `NAME=PATH[,shuffle][,format=opus|mp3][,bitrate=KBPS|,passthrough]` (the options in any order). A PATH holding
    /// commas keeps them unless the last parts are known options.
    public static func parse(_ text: String) throws(ParseError) -> ChannelSpec {
        guard let equals = text.firstIndex(of: "=") else { throw .malformed("expected NAME=PATH, got '\(text)'") }
        let name = String(text[..<equals])
        guard RadioChannel.isValidName(name) else {
            throw .malformed("channel name '\(name)': use letters, digits, '-', '_' and '.'")
        }
        var path = String(text[text.index(after: equals)...])
        var shuffle = false
        var bitrateText: String?
        var format: TranscodeFormat?
        var passthrough = false
        var isPrivate = false
        while let comma = path.lastIndex(of: ",") {
            let option = path[path.index(after: comma)...]
            if option == "shuffle" {
                shuffle = true
            } else if option == "passthrough" {
                passthrough = true
            } else if option == "private" {
                isPrivate = true
            } else if option.hasPrefix("bitrate=") {
                // Checked once the format is known (the options are read from the end).
                bitrateText = String(option.dropFirst("bitrate=".count))
            } else if option.hasPrefix("format=") {
                let value = option.dropFirst("format=".count)
                guard let chosen = TranscodeFormat(rawValue: String(value)) else {
                    throw .malformed("channel '\(name)': format takes opus or mp3, got '\(value)'")
                }
                format = chosen
            } else {
                break
            }
            path = String(path[..<comma])
        }
        guard !path.isEmpty else { throw .malformed("channel '\(name)' has no PATH") }
        var bitrate: Int?
        if let value = bitrateText {
            let range = (format ?? .mp3).kbpsRange
            guard value.count <= 3, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let kbps = Int(value), range.contains(kbps) else {
                throw .malformed("channel '\(name)': bitrate takes kbit/s from \(range.lowerBound) to \(range.upperBound) for \(format == .opus ? "Opus" : "MP3"), got '\(value)'")
            }
            bitrate = kbps
        }
        if passthrough && (bitrate != nil || format != nil) {
            throw .malformed("channel '\(name)': passthrough sends the tracks as they are, \(format != nil ? "format=" : "bitrate=") transcodes them: give one")
        }
        var spec = ChannelSpec(name: name, path: path, shuffle: shuffle, bitrate: bitrate, passthrough: passthrough)
        spec.format = format
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
