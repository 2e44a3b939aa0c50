/// The URL paths of streamd's API that its clients build: one place states where a track's
/// bytes and its seek index live, for the server's router and streamplay alike.
public enum APIRoutes {
    /// Where the library's files are served: `/media/<percent-encoded path>`.
    public static let mediaPrefix = "/media/"
    /// Where a file's seek index is served: `/api/index/<the same encoded path>` (a `SeekIndexDocument`).
    public static let seekIndexPrefix = "/api/index/"
    /// The library's status (a `StatusDocument`).
    public static let status = "/api/status"
    /// The query member of a seek index request that narrows the points to those around a time, in seconds.
    public static let seekTimeQuery = "t"

    /// The `/media/` URL path of a file at `path`, relative to the library folder.
    public static func mediaPath(forLibraryPath path: String) -> String {
        mediaPrefix + percentEncoded(path)
    }

    /// A relative path percent-encoded for a URL (`appendPercentEncoded`).
    public static func percentEncoded(_ path: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count + 16)
        var text = path
        text.withUTF8 { appendPercentEncoded($0, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The seek index URL for a track's `/media/` URL (absolute, or a path): the same location
    /// with `/media/` replaced by `/api/index/`, the media URL's query dropped, and `?t=` added
    /// when `around` is given. Nil when the URL has no `/media/` segment (not a streamd file).
    public static func seekIndexURL(forMediaURL url: String, around seconds: Double? = nil) -> String? {
        // The query and fragment belong to the media request; the first `/media/` of the rest
        // is the route (streamd may sit behind a proxy under a path prefix).
        let location = url.prefix { $0 != "?" && $0 != "#" }
        guard let range = location.firstRange(of: mediaPrefix) else { return nil }
        let query = seconds.map { "?\(seekTimeQuery)=\($0)" } ?? ""
        return location[..<range.lowerBound] + seekIndexPrefix + location[range.upperBound...] + query
    }

    /// Percent-encodes a relative path's bytes for a URL: unreserved bytes (RFC 3986) and `/`
    /// stay, every other byte becomes `%XX`.
    /// (Bytes in place, not a generic sequence: the API encodes a URL for every track it lists.)
    @inlinable
    public static func appendPercentEncoded(_ path: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        for byte in path {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(upperHex[Int(byte >> 4)])
                out.append(upperHex[Int(byte & 15)])
            }
        }
    }

    @usableFromInline static let upperHex = Array("0123456789ABCDEF".utf8)
}
