#if canImport(Glibc)
import Glibc
#endif
import CLinux
import StreamHTTP
import StreamShared

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
    /// The folder, held open: files are opened beneath it (`open(encoded:)`).
    private let directory: RootDirectory?

    /// Resolves `folder`; nil when it does not exist or is not a directory.
    public init?(folder: String) {
        guard let real = PathResolver.realPath(folder) else { return nil }
        var info = stat()
        guard stat(real, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        root = real.count > 1 && real.hasSuffix("/") ? String(real.dropLast()) : real
        directory = RootDirectory(path: root)
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
        // One pass over the bytes: the length of the segment so far and how many of its bytes are dots.
        var length = 0, dots = 0
        for byte in path.utf8 {
            switch byte {
            case 0, UInt8(ascii: "\\"):
                return false
            case UInt8(ascii: "/"):
                if length == 0 || dots == length && length <= 2 { return false }
                length = 0
                dots = 0
            default:
                length += 1
                if byte == UInt8(ascii: ".") { dots += 1 }
            }
        }
        return length > 0 && !(dots == length && length <= 2)
    }

    /// The absolute path of the file for an encoded relative URL path (the part after /media/).
    public func resolve(encoded relative: Substring) throws(PathError) -> String {
        let decoded = try Self.decodedLibraryPath(relative)
        let candidate = root + "/" + decoded
        guard let real = PathResolver.realPath(candidate) else { throw .notFound }
        // Symlinks may point anywhere: the resolved path must still be inside the root.
        guard real.hasPrefix(root + "/") else { throw .outsideRoot }
        // ... and not into a hidden file or folder of it.
        if PathResolver.isHidden(String(real.dropFirst(root.count + 1))) { throw .notFound }
        return real
    }

    /// The file for an encoded relative URL path, opened, and its absolute path. One openat2
    /// that refuses symlinks and every way out of the folder does what `resolve` and an open do
    /// with a realpath (a readlink per path segment, 7 % of a Range GET's CPU); a path through a
    /// symlink, or a kernel without openat2, takes `resolve`'s way.
    public func open(encoded relative: Substring) throws(PathError) -> (path: String, file: OpenFile) {
        let decoded = try Self.decodedLibraryPath(relative)
        if let directory {
            let resolve = UInt64(RESOLVE_BENEATH) | UInt64(RESOLVE_NO_SYMLINKS) | UInt64(RESOLVE_NO_MAGICLINKS)
            let fd = clinux_open_beneath(directory.fd, decoded, resolve)
            if fd >= 0 {
                guard let file = try? OpenFile(adopting: fd) else { throw .notFound }
                return (root + "/" + decoded, file)
            }
            // ELOOP: a symlink on the way; EXDEV, ENOSYS, EPERM, EAGAIN: the kernel declined.
            if errno != ELOOP && errno != EXDEV && errno != ENOSYS && errno != EPERM && errno != EAGAIN { throw .notFound }
        }
        let absolute = try resolve(encoded: relative)
        guard let file = try? OpenFile(path: absolute) else { throw .notFound }
        return (absolute, file)
    }

    /// The decoded relative path of a URL path, checked: no bad escapes, no empty, `.` or `..`
    /// segments (400), and nothing hidden: dotfiles and dot-folders (.git, .DS_Store, .env) are
    /// not part of the library (404).
    static func decodedLibraryPath(_ encoded: Substring) throws(PathError) -> String {
        guard let decoded = percentDecode(encoded), isSafeRelativePath(decoded) else { throw .malformed }
        if isHidden(decoded) { throw .notFound }
        return decoded
    }

    /// Whether any segment of a relative path starts with a dot.
    public static func isHidden(_ relative: String) -> Bool {
        var atSegmentStart = true
        for byte in relative.utf8 {
            if atSegmentStart && byte == UInt8(ascii: ".") { return true }
            atSegmentStart = byte == UInt8(ascii: "/")
        }
        return false
    }

    /// The path relative to the root for a resolved absolute path.
    public func relative(_ absolute: String) -> String? {
        guard absolute.hasPrefix(root + "/") else { return nil }
        return String(absolute.dropFirst(root.count + 1))
    }

    /// Percent-encodes a relative path for use in URLs (keeps `/` and unreserved characters).
    public static func percentEncode(_ path: String) -> String { APIRoutes.percentEncoded(path) }

    package static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

/// The library folder held open for the life of its resolver.
private final class RootDirectory: Sendable {
    let fd: Int32

    init?(path: String) {
        fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
    }

    deinit { close(fd) }
}

extension PathError {
    /// How a path that does not lead to a file of the library is refused.
    package var refusal: HTTPRefusal {
        switch self {
        case .malformed: return .badRequest("bad path")
        case .outsideRoot: return HTTPRefusal(403, "forbidden")
        case .notFound: return .notFound()
        }
    }
}
