import Foundation
import Testing
@testable import StreamServer
@testable import StreamHTTP
import TestSupport

/// The page's files as streamd serves them: the same bytes as Sources/Web (embedded at build time
/// by WebAssetsPlugin), each with its Content-Type and a strong ETag answered with 304,
/// under 200 KB together, and nothing that loads from another origin or needs inline script.
@Suite struct WebPageFilesTests {
    static let names = ["index.html", "style.css", "app.js", "player.js", "waveform.js"]

    @Test func embeddedFilesAreTheSourceFiles() throws {
        let folder = TestPaths.packageRoot.appendingPathComponent("Sources/Web")
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { !$0.hasPrefix(".") && !$0.hasSuffix(".swift") }.sorted()
        #expect(onDisk == Self.names.sorted(), "every file of Sources/Web is embedded, and this test knows each one")
        #expect(WebPage.files.keys.sorted() == onDisk, "the embedded files are those of Sources/Web")
        for name in Self.names {
            let source = try Data(contentsOf: folder.appendingPathComponent(name))
            let served = try #require(WebPage.files[name], "\(name) is embedded")
            #expect(Array(source) == served.bytes, "\(name): the embedded copy differs from Sources/Web")
        }
    }

    /// What goes out on the wire for each path is the file's bytes, to the last newline.
    @Test func servedBodiesAreTheSourceFilesBytes() throws {
        let (router, routerFolder) = try RouterTests.makeRouter()
        defer { try? FileManager.default.removeItem(at: routerFolder) }
        let folder = TestPaths.packageRoot.appendingPathComponent("Sources/Web")
        let paths = ["/": "index.html", "/index.html": "index.html", "/web/style.css": "style.css", "/web/app.js": "app.js",
                     "/web/player.js": "player.js", "/web/waveform.js": "waveform.js"]
        for (path, name) in paths {
            let source = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
            let response = try router.handle(RouterTests.request(path))
            #expect(response.status == 200, "\(path)")
            var body: [UInt8] = []
            while let part = response.body?.nextPart() {
                switch part {
                case .bytes(let chunk): body += chunk
                case .file: Issue.record("\(path): the page's file came as a file part")
                }
            }
            #expect(body == source, "\(path): \(body.count) bytes served, Sources/Web/\(name) has \(source.count)")
            #expect(response.headers.first { $0.0 == "Content-Length" }?.1 == String(source.count), "\(path): \(response.headers)")
        }
    }

    @Test func filesAreServedWithTypesAndValidators() throws {
        let (router, folder) = try RouterTests.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        let types = ["/": "text/html; charset=utf-8", "/index.html": "text/html; charset=utf-8",
                     "/web/style.css": "text/css; charset=utf-8", "/web/app.js": "text/javascript; charset=utf-8",
                     "/web/player.js": "text/javascript; charset=utf-8", "/web/waveform.js": "text/javascript; charset=utf-8"]
        for (path, type) in types {
            let answer = RouterTests.answer(router, RouterTests.request(path))
            #expect(answer.status == 200, "\(path)")
            #expect(answer.headers.first { $0.0 == "Content-Type" }?.1 == type, "\(path): \(answer.headers)")
            let etag = try #require(answer.headers.first { $0.0 == "ETag" }?.1, "\(path) has an ETag")
            #expect(answer.headers.contains { $0.0 == "Cache-Control" && $0.1 == "no-cache" }, "\(path) is revalidated")
            let again = RouterTests.answer(router, RouterTests.request(path, headers: [("If-None-Match", etag)]))
            #expect(again.status == 304, "\(path): 304 for its own ETag")
        }
        for missing in ["/web/", "/web/nope.js", "/web/../index.html", "/web/index.html/x"] {
            #expect(RouterTests.answer(router, RouterTests.request(missing)).status == 404, "\(missing)")
        }
    }

    @Test func pageIsSmallSelfContainedAndCSPFriendly() throws {
        #expect(WebPage.totalBytes < 200 * 1024, "HTML+JS+CSS are \(WebPage.totalBytes) bytes (limit 200 KB)")
        for name in Self.names {
            let text = String(decoding: try #require(WebPage.files[name]).bytes, as: UTF8.self)
            // No other origin: no absolute URL that the page would load.
            #expect(!text.contains("src=\"http") && !text.contains("href=\"http") && !text.contains("url(http")
                    && !text.contains("import 'http") && !text.contains("//cdn"), "\(name) loads nothing from elsewhere")
            if name == "index.html" {
                // script-src 'self' and style-src 'self': no inline script, handler or style attribute.
                let inline = ["<script>", "<style", " style=\"", " onclick=", " onload=", " onerror=", "javascript:"]
                for bad in inline { #expect(!text.contains(bad), "index.html holds \(bad)") }
            }
        }
    }
}
