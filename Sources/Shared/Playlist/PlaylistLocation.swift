/// What a playlist entry's location points to, once resolved against the playlist's folder.
public enum PlaylistTarget: Sendable, Equatable {
    /// A URL with a scheme other than `file:` (http, https, ...), as written.
    case remote(String)
    /// An absolute POSIX path, normalised (no `.`, `..` or doubled slashes). It may still lie
    /// outside any folder the caller serves, or not exist: the caller checks.
    case local(String)
    /// A location that names nothing on this machine (a Windows drive or UNC path, a file URL
    /// of another host, a bad escape), and why.
    case unresolvable(String)
}

/// Resolves playlist locations: URLs, `file:` URLs, absolute and relative paths, with the
/// backslash separators of playlists written on Windows.
public enum PlaylistLocation {
    public static func resolve(_ location: String, relativeTo directory: String) -> PlaylistTarget {
        if location.isEmpty { return .unresolvable("empty location") }
        if let scheme = scheme(of: location) {
            guard scheme == "file" else { return .remote(location) }
            return fileURL(location)
        }
        if isWindowsAbsolute(location) { return .unresolvable("Windows path '\(location.prefix(80))'") }
        // Playlists from Windows separate folders with backslashes; a backslash in a real file
        // name on Linux is rare enough to give up for them.
        let path = location.replacingBackslashes()
        return .local(normalise(path.hasPrefix("/") ? path : directory + "/" + path))
    }

    /// The URL scheme, lower-cased, when the location starts with one (`http:`, `file:`).
    /// One letter before the colon is a Windows drive, not a scheme.
    static func scheme(of location: String) -> String? {
        guard let colon = location.firstIndex(of: ":") else { return nil }
        let name = location[..<colon]
        guard name.unicodeScalars.count >= 2, let first = name.unicodeScalars.first, first.isASCIILetter,
              name.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric || $0 == "+" || $0 == "-" || $0 == "." }) else {
            return nil
        }
        return name.lowercased()
    }

    /// `C:\...`, `C:/...`, `C:file` and `\\server\share\...`.
    static func isWindowsAbsolute(_ location: String) -> Bool {
        let scalars = Array(location.unicodeScalars.prefix(2))
        if scalars.count == 2, scalars[0].isASCIILetter, scalars[1] == ":" { return true }
        return location.hasPrefix("\\\\")
    }

    /// `file:///path`, `file://localhost/path` or `file:/path`, percent-decoded.
    static func fileURL(_ location: String) -> PlaylistTarget {
        var rest = Substring(location.dropFirst("file:".count))
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let host = rest.prefix { $0 != "/" }
            guard host.isEmpty || host.lowercased() == "localhost" else {
                return .unresolvable("file URL of another host '\(host.prefix(80))'")
            }
            rest = rest.dropFirst(host.count)
        }
        // A query or fragment is not part of the path.
        rest = rest.prefix { $0 != "?" && $0 != "#" }
        guard rest.hasPrefix("/") else { return .unresolvable("file URL without an absolute path") }
        guard let decoded = percentDecode(rest) else { return .unresolvable("bad percent escape in '\(location.prefix(80))'") }
        guard !decoded.contains("\0") else { return .unresolvable("NUL in a file URL") }
        return .local(normalise(decoded))
    }

    /// `%XX` escapes decoded as UTF-8 bytes; nil for a malformed escape or bytes that are not UTF-8.
    static func percentDecode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: i)
                guard first < utf8.endIndex, utf8.index(after: first) < utf8.endIndex,
                      let high = hexValue(utf8[first]), let low = hexValue(utf8[utf8.index(after: first)]) else { return nil }
                bytes.append(high << 4 | low)
                i = utf8.index(i, offsetBy: 3)
            } else {
                bytes.append(byte)
                i = utf8.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// An absolute path without `.`, `..` (which stops at `/`) or empty components.
    public static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." { _ = parts.popLast(); continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }
}

extension String {
    fileprivate func replacingBackslashes() -> String {
        String(unicodeScalars.map { $0 == "\\" ? "/" : Character($0) })
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { (0x41...0x5A).contains(value) || (0x61...0x7A).contains(value) }
    fileprivate var isASCIIAlphanumeric: Bool { isASCIILetter || (0x30...0x39).contains(value) }
}
