import Foundation
import Testing
@testable import StreamServer
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamRadio

/// The router in process: what it answers, refuses and defers to the blocking pool, without a
/// server (issue 22: routes tested through the router; the loops have their own tests).
@Suite struct RouterTests {
    /// A router over a folder holding one small file, with an in-memory catalog.
    static func makeRouter(radio: RadioService? = nil, startedAt: Date = Date()) throws -> (Router, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("router-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) }).write(to: folder.appendingPathComponent("bytes.bin"))
        let resolver = try #require(PathResolver(folder: folder.path))
        return (Router(resolver: resolver, catalog: try Catalog(resolver: resolver), radio: radio, startedAt: startedAt), folder)
    }

    static func request(_ method: String, _ target: String, headers: [(name: String, value: String)] = []) -> HTTPRequest {
        HTTPRequest(method: method, target: target, minorVersion: 1, headers: [("Host", "x")] + headers)
    }

    static func request(_ target: String, headers: [(name: String, value: String)] = []) -> HTTPRequest {
        request("GET", target, headers: headers)
    }

    /// The response or the refusal, with deferred work run here as the pool would.
    static func answer(_ router: Router, _ request: HTTPRequest) -> (status: Int, headers: [(String, String)], deferred: Bool) {
        var deferred = false
        do throws(HTTPRefusal) {
            var response = try router.handle(request)
            if let make = response.offLoop {
                deferred = true
                response = try make()
            }
            return (response.status, response.headers, deferred)
        } catch {
            return (error.status, error.response.headers, deferred)
        }
    }

    @Test(arguments: [
        ("DELETE", "/media/bytes.bin", 405),
        ("BREW", "/", 501),
        ("GET", "/media/../x", 400),
        ("GET", "/media/missing.bin", 404),
        ("GET", "/nothing", 404),
        ("GET", "/api/index/bytes.bin?t=-1", 400),
    ])
    func refusals_areRenderedWithTheirStatus(method: String, target: String, status: Int) throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        let answer = Self.answer(router, Self.request(method, target))
        #expect(answer.status == status)
        if status == 405 { #expect(answer.headers.contains { $0.0 == "Allow" && $0.1 == "GET, HEAD, OPTIONS" }) }
    }

    @Test func filesAreAnsweredOnTheLoop_statusAndIndexesOffIt() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        let range = Self.answer(router, Self.request("/media/bytes.bin", headers: [("Range", "bytes=10-19")]))
        #expect(range.status == 206 && !range.deferred)
        let status = Self.answer(router, Self.request("/api/status"))
        #expect(status.status == 200 && status.deferred)
        // Not audio: the analysis refuses it, on the pool, as 422.
        let index = Self.answer(router, Self.request("/api/index/bytes.bin"))
        #expect(index.status == 422 && index.deferred)
    }

    /// The bytes of a response made in process (deferred work run here), parts that are files included.
    static func body(_ router: Router, _ request: HTTPRequest) throws -> (status: Int, text: String) {
        var response = try router.handle(request)
        if let make = response.offLoop { response = try make() }
        var bytes: [UInt8] = []
        while let part = response.body?.nextPart() {
            switch part {
            case .bytes(let chunk): bytes += chunk
            case .file: Issue.record("a generated document came as a file part")
            }
        }
        return (response.status, String(decoding: bytes, as: UTF8.self))
    }

    /// The Icecast status page shows the router's start, read from the clock it was given:
    /// no waiting, no tolerance (end to end, only "some time" could be checked).
    @Test func icecastStatus_showsTheInjectedStart_andNoSourcesWithoutChannels() throws {
        // 2001-09-09T01:46:40Z: a second count whose HTTP date and ISO 8601 forms are known.
        let (router, folder) = try Self.makeRouter(radio: RadioService(), startedAt: Date(timeIntervalSince1970: 1_000_000_000))
        defer { try? FileManager.default.removeItem(at: folder) }
        let status = try Self.body(router, Self.request("/status-json.xsl"))
        #expect(status.status == 200)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(status.text.utf8)) as? [String: Any])
        let stats = try #require(root["icestats"] as? [String: Any])
        #expect(stats["server_start"] as? String == "Sun, 09 Sep 2001 01:46:40 GMT")
        #expect(stats["server_start_iso8601"] as? String == "2001-09-09T01:46:40+0000")
        #expect(stats["host"] as? String == "x")
        #expect((stats["source"] as? [Any])?.isEmpty == true)
        let channels = try Self.body(router, Self.request("/api/channels"))
        #expect(channels.status == 200 && channels.text == "[]\n")
    }

    /// Without radio the radio routes are not there; OPTIONS lists the methods served.
    @Test func radioRoutes_withoutRadio_are404_andOptionsListsTheMethods() throws {
        let (router, folder) = try Self.makeRouter()
        defer { try? FileManager.default.removeItem(at: folder) }
        for target in ["/status-json.xsl", "/api/channels", "/radio/main", "/admin/metadata"] {
            #expect(Self.answer(router, Self.request(target)).status == 404, "\(target)")
        }
        let options = Self.answer(router, Self.request("OPTIONS", "/"))
        #expect(options.status == 204)
        #expect(options.headers.contains { $0.0 == "Allow" && $0.1 == "GET, HEAD, OPTIONS" })
    }
}
