import Foundation
import Testing
@testable import StreamServer
@testable import StreamHTTP
@testable import StreamLibrary

/// The router in process: what it answers, refuses and defers to the blocking pool, without a
/// server (issue 22: routes tested through the router; the loops have their own tests).
@Suite struct RouterTests {
    /// A router over a folder holding one small file, with an in-memory catalog.
    static func makeRouter() throws -> (Router, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("router-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data((0..<1000).map { UInt8(truncatingIfNeeded: $0) }).write(to: folder.appendingPathComponent("bytes.bin"))
        let resolver = try #require(PathResolver(folder: folder.path))
        return (Router(resolver: resolver, catalog: try Catalog(resolver: resolver)), folder)
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
}
