import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22 item 1: an event loop never waits on a worker, the disk or a slow query. With one
/// loop (`--threads 1`) and an analysis that hangs, the request that needs it waits on the
/// blocking pool while `/api/status` and 64 KiB Range requests on the same loop keep answering
/// within milliseconds.
@Suite struct LoopNeverBlocksTests {
    /// A folder with one ordinary MP3 and a copy whose full walk hangs (the quick scan lists it).
    static func makeLibrary() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-loop-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let source = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        try FileManager.default.copyItem(at: source, to: dir.appendingPathComponent("cbr-128k-44k.mp3"))
        try FileManager.default.copyItem(at: source, to: dir.appendingPathComponent("slow-walk.mp3"))
        return dir
    }

    /// Seconds each of `count` requests on one keep-alive connection took, after checking each answer.
    static func latencies(port: Int, count: Int, target: String, headers: [String: String] = [:],
                          check: (RawResponse) -> Bool) throws -> [Double] {
        let connection = try RawConnection(port: port, timeout: 10)
        var seconds: [Double] = []
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            let response = try connection.request("GET", target, headers: headers)
            seconds.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            guard check(response) else { throw TestFailure("\(target): unexpected answer \(response.statusLine)") }
        }
        return seconds
    }

    static func p99(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    @Test func hungAnalysis_leavesTheLoopServingOthers() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let walkTimeout = TestTiming.seconds(5)
        let server = try StreamdProcess(folder: library, extraArguments: ["--threads", "1", "--analyze-timeout", "\(walkTimeout)", "--quiet"],
                                        analyzerFault: "walkhang:slow-walk.mp3")
        defer { _ = server.stop() }

        // The request that needs the hanging walk: sent, not yet answered.
        let hung = try RawConnection(port: server.port, timeout: walkTimeout + 30)
        try hung.sendAll("GET /api/index/slow-walk.mp3 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        // Until the worker is walking the file (its child appears), the wait has not begun.
        let waitStart = Date()
        while AnalyzerIsolationTests.children(of: server.process.processIdentifier).isEmpty {
            guard Date().timeIntervalSince(waitStart) < TestTiming.seconds(10) else { throw TestFailure("no analyzer worker started") }
            Thread.sleep(forTimeInterval: 0.01)
        }

        // Meanwhile, on the same (only) loop: status and Range GETs, warmed up, then timed.
        let expected = Array(try ServerEndToEndTests.bytes(of: library.appendingPathComponent("cbr-128k-44k.mp3")).prefix(65_536))
        let isRange: (RawResponse) -> Bool = { $0.status == 206 && $0.body == expected }
        let isStatus: (RawResponse) -> Bool = { $0.status == 200 && $0.body.first == UInt8(ascii: "{") }
        _ = try Self.latencies(port: server.port, count: 20, target: "/api/status", check: isStatus)
        let status = try Self.latencies(port: server.port, count: 200, target: "/api/status", check: isStatus)
        let ranges = try Self.latencies(port: server.port, count: 200, target: "/media/cbr-128k-44k.mp3",
                                        headers: ["Range": "bytes=0-65535"], check: isRange)
        let limit = TestTiming.seconds(0.005)
        #expect(Self.p99(status) <= limit, "/api/status p99 \(Self.p99(status) * 1000) ms behind a hung analysis")
        #expect(Self.p99(ranges) <= limit, "Range GET p99 \(Self.p99(ranges) * 1000) ms behind a hung analysis")

        // All of it while the walk still hung; the waiting request then gets its answer.
        #expect(!AnalyzerIsolationTests.children(of: server.process.processIdentifier).isEmpty, "the walk still hangs")
        let answer = try hung.readResponse()
        #expect(answer.status == 422 && String(decoding: answer.body, as: UTF8.self).contains("timed out"),
                "\(answer.statusLine) \(String(decoding: answer.body, as: UTF8.self))")
    }

    @Test func pipelinedRequests_behindOffLoopWork_areAnsweredInOrder() throws {
        let library = try Self.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--threads", "1", "--quiet"])
        defer { _ = server.stop() }
        let connection = try RawConnection(port: server.port, timeout: 20)
        // The seek index (made on the pool), then a file (made on the loop), then HEAD of status
        // (on the pool): three answers, in the order asked.
        try connection.sendAll("GET /api/index/cbr-128k-44k.mp3 HTTP/1.1\r\nHost: x\r\n\r\n"
                            + "GET /media/cbr-128k-44k.mp3 HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\n"
                            + "HEAD /api/status HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let index = try connection.readResponse()
        #expect(index.status == 200 && String(decoding: index.body, as: UTF8.self).contains("\"points\""))
        let range = try connection.readResponse()
        #expect(range.status == 206 && range.body.count == 10)
        let head = try connection.readResponse(head: true)
        #expect(head.status == 200 && head.header("Connection")?.lowercased() == "keep-alive",
                "HTTP/1.0 keep-alive is said on a response made off the loop too")
        #expect(try connection.request("GET", "/api/status").status == 200, "the connection is still usable")
    }
}
