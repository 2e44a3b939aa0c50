/// `--format opus|mp3 --bitrate N`: the URL that asks streamd for a transcode of one of its
/// `/media/` tracks (README: `?format=&bitrate=&offset=`). A transcode in progress has no ranges
/// (`Accept-Ranges: none`), so a start position is asked for with `offset=SECONDS`: streamd starts
/// the encode at that exact sample, where a Range request could not be answered.
public struct TranscodeRequest: Sendable, Equatable {
    /// The encodings streamd offers.
    public enum Format: String, Sendable, CaseIterable {
        case opus, mp3

        /// The bitrates streamd accepts (kbit/s) and the one it takes when none is given.
        public var bitrates: ClosedRange<Int> { self == .opus ? 6...510 : 8...320 }
        public var defaultBitrate: Int { self == .opus ? 128 : 192 }
        /// The codec name the player reports for this encoding (`--stats` "codec").
        public var codec: String { self == .opus ? "opus" : "mp3" }
    }

    /// Why a source cannot be transcoded: one line for the user.
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    public var format: Format
    /// kbit/s; nil: streamd's default for the format.
    public var bitrateKbps: Int?

    public init(format: Format, bitrateKbps: Int? = nil) {
        self.format = format
        self.bitrateKbps = bitrateKbps
    }

    /// The bitrate the transcode has (the one asked for, else streamd's default).
    public var effectiveBitrate: Int { bitrateKbps ?? format.defaultBitrate }

    /// `source` with the transcode's query appended, starting `offsetSeconds` in (0: the start).
    /// Only an http(s) URL of a streamd track (a `/media/` path) can be transcoded.
    public func url(for source: String, offsetSeconds: Double = 0) throws(Refusal) -> String {
        let lower = source.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw Refusal(description: "--format needs a streamd track URL (http(s)://HOST:PORT/media/...); '\(source)' is not one")
        }
        // The path after the authority (HTTPURL takes http:// only; https:// goes through libcurl).
        let afterScheme = source[source.index(source.startIndex, offsetBy: lower.hasPrefix("https://") ? 8 : 7)...]
        let target = afterScheme.firstIndex(of: "/").map { afterScheme[$0...] } ?? ""
        guard target.hasPrefix("/media/") && target.count > "/media/".count && !target.hasPrefix("/media/?") else {
            throw Refusal(description: "--format needs a streamd track URL (a /media/ path); '\(source)' is not one")
        }
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        if path.count > 1, path[1].split(separator: "&").contains(where: { $0.hasPrefix("format=") || $0.hasPrefix("offset=") }) {
            throw Refusal(description: "--format: '\(source)' already has a format= or offset= in its query")
        }
        var query = "format=\(format.rawValue)"
        if let bitrateKbps { query += "&bitrate=\(bitrateKbps)" }
        if offsetSeconds > 0 { query += "&offset=\(Self.seconds(offsetSeconds))" }
        // Anything after a '#' is not sent: the query goes before it.
        let fragmentStart = source.firstIndex(of: "#") ?? source.endIndex
        let base = source[..<fragmentStart]
        return base + (base.contains("?") ? "&" : "?") + query + source[fragmentStart...]
    }

    /// Whether `url` asks streamd for a transcode (`format=` other than `raw` in its query): its
    /// bytes are not the file's, so the file's seek index (`/api/index`) does not apply to them.
    public static func isTranscode(_ url: String) -> Bool {
        let location = url.prefix { $0 != "#" }
        guard let question = location.firstIndex(of: "?") else { return false }
        return location[location.index(after: question)...].split(separator: "&")
            .contains { $0.hasPrefix("format=") && $0 != "format=raw" }
    }

    /// Seconds as streamd parses them: a plain decimal, to the microsecond, no exponent.
    static func seconds(_ value: Double) -> String {
        let micros = Int((value * 1_000_000).rounded())
        let whole = micros / 1_000_000, fraction = micros % 1_000_000
        guard fraction != 0 else { return String(whole) }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(whole).\(digits)"
    }
}
