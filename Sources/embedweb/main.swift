// Writes the Swift source of `WebAssets` (the library page's files, carried in streamd's binary)
// from the files in Sources/Web. Run at build time by WebAssetsPlugin, into the plugin's work
// directory: the page has one copy, its files, and a built streamd needs no file beside it.
// Usage: embedweb OUTPUT.swift FILE...
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a page file cannot be embedded.
enum EmbedError: Error, CustomStringConvertible {
    /// The file could not be opened, read or written (errno's text).
    case io(path: String, reason: String)
    /// The file is not UTF-8 text: the page's files are served as `charset=utf-8`.
    case notUTF8(path: String)
    /// No Content-Type is known for the file's extension: a new kind of file needs one chosen here.
    case unknownKind(path: String)
    /// The command line is not `OUTPUT FILE...`.
    case usage

    var description: String {
        switch self {
        case .io(let path, let reason): return "\(path): \(reason)"
        case .notUTF8(let path): return "\(path): not UTF-8 text"
        case .unknownKind(let path): return "\(path): no Content-Type for this kind of file (.html, .css, .js)"
        case .usage: return "usage: embedweb OUTPUT.swift FILE..."
        }
    }
}

/// The Content-Type the page's files are served with, by extension.
func contentType(of path: String) throws -> String {
    if path.hasSuffix(".html") { return "text/html; charset=utf-8" }
    if path.hasSuffix(".css") { return "text/css; charset=utf-8" }
    if path.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
    throw EmbedError.unknownKind(path: path)
}

/// The whole file's bytes.
func readFile(_ path: String) throws -> [UInt8] {
    guard let file = fopen(path, "rb") else { throw EmbedError.io(path: path, reason: String(cString: strerror(errno))) }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
        bytes += chunk[..<count]
        if count < chunk.count {
            if ferror(file) != 0 { throw EmbedError.io(path: path, reason: "read failed") }
            return bytes
        }
    }
}

/// Writes `text` to `path` only when it differs from what is there, so an unchanged page does
/// not make StreamServer compile again.
func writeIfChanged(_ text: String, to path: String) throws {
    let bytes = Array(text.utf8)
    if let old = try? readFile(path), old == bytes { return }
    guard let file = fopen(path, "wb") else { throw EmbedError.io(path: path, reason: String(cString: strerror(errno))) }
    let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    if fclose(file) != 0 || written != bytes.count { throw EmbedError.io(path: path, reason: "write failed") }
}

/// `text` as a Swift string literal that holds exactly these characters: quote, backslash and
/// every control character escaped, so no file content can end or bend the literal.
func swiftLiteral(_ text: String) -> String {
    var literal = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": literal += "\\\""
        case "\\": literal += "\\\\"
        case "\n": literal += "\\n"
        case "\t": literal += "\\t"
        case "\r": literal += "\\r"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F:
            literal += "\\u{" + String(scalar.value, radix: 16) + "}"
        default: literal.unicodeScalars.append(scalar)
        }
    }
    return literal + "\""
}

/// The generated source for the given files, in the order given.
func webAssetsSource(paths: [String]) throws -> String {
    var source = """
        // Generated at build time by embedweb (WebAssetsPlugin) from Sources/Web: edit those files.
        /// The library page's files, served under `/` and `/web/<name>` (public as `WebPageFiles.all`).
        enum WebAssets {
            /// Each file: its name in Sources/Web, its Content-Type and its text (the file's bytes).
            static let files: [(name: String, contentType: String, text: String)] = [

        """
    for path in paths {
        let bytes = try readFile(path)
        guard let text = String(validating: bytes, as: UTF8.self) else { throw EmbedError.notUTF8(path: path) }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        source += "        (\(swiftLiteral(name)), \(swiftLiteral(try contentType(of: path))),\n"
        source += "         \(swiftLiteral(text))),\n"
    }
    source += "    ]\n}\n"
    return source
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    guard let output = arguments.first else { throw EmbedError.usage }
    try writeIfChanged(try webAssetsSource(paths: Array(arguments.dropFirst())), to: output)
} catch {
    let line = Array("embedweb: \(error)\n".utf8)
    _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}
