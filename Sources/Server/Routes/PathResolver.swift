#if canImport(Glibc)
import Glibc
#endif

/// Why a request path cannot be mapped to a file under the library folder.
public enum PathError: Error, Equatable, Sendable {
    /// Bad percent-encoding, NUL bytes, `..` segments or similar: 400.
    case malformed
    /// The path resolves (via symlinks) outside the library folder: 403.
    case outsideRoot
    /// Nothing there: 404.
    case notFound
}

/// Maps URL paths under /media/ to real files inside the library folder, refusing any way out.
public struct PathResolver: Sendable {
    /// The library folder, as an absolute path with symlinks resolved and no trailing slash.
    public let root: String

    /// Resolves `folder`; nil when it does not exist or is not a directory.
    public init?(folder: String) {
        guard let real = PathResolver.realPath(folder) else { return nil }
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        root = real.count > 1 && real.hasSuffix("/") ? String(real.dropLast()) : real
    }

    /// Decodes `%XX` escapes; nil on a bad escape or invalid UTF-8.
    public static func percentDecode<S: StringProtocol>(_ text: S) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Checks a decoded relative path: no empty, `.` or `..` segments, no NUL, no backslash.
    public static func isSafeRelativePath(_ path: String) -> Bool {
        guard !path.isEmpty, !path.utf8.contains(0), !path.utf8.contains(UInt8(ascii: "\\")) else { return false }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            if segment.isEmpty || segment == "." || segment == ".." { return false }
        }
        return true
    }

    /// The absolute path of the file for an encoded relative URL path (the part after /media/).
    public func resolve(encoded relative: Substring) throws(PathError) -> String {
        guard let decoded = PathResolver.percentDecode(relative), PathResolver.isSafeRelativePath(decoded) else {
            throw .malformed
        }
        // Dotfiles and dot-folders (.git, .DS_Store, .env) are not part of the library.
        if PathResolver.isHidden(decoded) { throw .notFound }
        let candidate = root + "/" + decoded
        guard let real = PathResolver.realPath(candidate) else { throw .notFound }
        // Symlinks may point anywhere: the resolved path must still be inside the root.
        guard real.hasPrefix(root + "/") else { throw .outsideRoot }
        // ... and not into a hidden file or folder of it.
        if PathResolver.isHidden(String(real.dropFirst(root.count + 1))) { throw .notFound }
        return real
    }

    /// Whether any segment of a relative path starts with a dot.
    public static func isHidden(_ relative: String) -> Bool {
        relative.split(separator: "/").contains { $0.hasPrefix(".") }
    }

    /// The path relative to the root for a resolved absolute path.
    public func relative(_ absolute: String) -> String? {
        guard absolute.hasPrefix(root + "/") else { return nil }
        return String(absolute.dropFirst(root.count + 1))
    }

    /// Percent-encodes a relative path for use in URLs (keeps `/` and unreserved characters).
    public static func percentEncode(_ path: String) -> String {
        // Bytes, then one String: the API encodes a URL for every track it lists.
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(path.utf8.count + 16)
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
