import StreamHTTP
import StreamWebPage
/// The library page: `index.html` at `/` and its script and style at `/web/<name>`, written as
/// real files in Sources/Web and carried in the binary (`WebPageFiles`, generated from them at
/// build time by WebAssetsPlugin). Each is one constant document (strong ETag, no-cache), so its size does
/// not grow with the library; the page makes no request to any other origin.
public enum WebPage {
    /// The prefix of the page's own files.
    static let prefix = "/web/"

    /// One file as sent: its bytes, Content-Type and ETag (computed once).
    struct File: Sendable {
        let bytes: [UInt8]
        let contentType: String
        let etag: String
    }

    /// Every file by name.
    static let files: [String: File] = {
        var files: [String: File] = [:]
        for file in WebPageFiles.all {
            let bytes = Array(file.text.utf8)
            files[file.name] = File(bytes: bytes, contentType: file.contentType, etag: JSONResponse.etag(of: bytes))
        }
        return files
    }()

    /// The page's HTML (`/`), as sent.
    public static var bytes: [UInt8] { files["index.html"]?.bytes ?? [] }

    /// The total size of the page's files, HTML, script and style (kept under 200 KB).
    public static var totalBytes: Int { files.values.reduce(0) { $0 + $1.bytes.count } }

    /// The response for `path` when it is one of the page's files, else nil.
    static func response(path: Substring, for request: HTTPRequest) -> HTTPResponse? {
        let name: Substring
        if path == "/" || path == "/index.html" {
            name = "index.html"
        } else if path.hasPrefix(prefix) {
            name = path.dropFirst(prefix.count)
        } else {
            return nil
        }
        guard let file = files[String(name)] else { return nil }
        return .generated(file.bytes, contentType: file.contentType, etag: file.etag, for: request)
    }
}
