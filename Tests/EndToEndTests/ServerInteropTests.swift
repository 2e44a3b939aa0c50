import Foundation
import Testing
import TestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// streamd against independent clients: curl, Swift's URLSession, ffprobe, ffmpeg, mpg123.
@Suite(.serialized, .ownThreads) struct ServerInteropTests {
    static func curl(_ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: Data) {
        try runCommand(try #require(which("curl")), ["-sS"] + arguments)
    }

    @Test func curl_contractRows() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("vbr-v2.mp3"))
        let server = try StreamdProcess(folder: library)
        let url = "\(server.baseURL)/media/vbr-v2.mp3"
        // Whole file, chunked.
        let whole = try Self.curl(["-D", "/dev/stderr", url])
        #expect(Array(whole.stdout) == original)
        let head = String(decoding: whole.stderr, as: UTF8.self).lowercased()
        #expect(head.contains("transfer-encoding: chunked"))
        #expect(head.contains("content-type: audio/mpeg"))
        // Edge ranges.
        let size = original.count
        let cases: [(String, [UInt8])] = [
            ("0-0", [original[0]]),
            ("\(size - 1)-\(size - 1)", [original[size - 1]]),
            ("-\(size * 2)", original),
            ("\(size - 5)-\(size + 100)", Array(original.suffix(5))),
        ]
        for (range, expected) in cases {
            let r = try Self.curl(["-r", range, url])
            #expect(Array(r.stdout) == expected, "range \(range)")
        }
        // Overlapping multi-range: merged into one range (RFC 9110 14.3), never sent twice.
        let multi = try Self.curl(["-D", "/dev/stderr", "-r", "0-99,50-149", url])
        #expect(String(decoding: multi.stderr, as: UTF8.self).lowercased().contains("content-range: bytes 0-149/\(size)"))
        #expect(Array(multi.stdout) == Array(original[0..<150]))
        // HEAD: headers only.
        let headOnly = try Self.curl(["-I", url])
        #expect(String(decoding: headOnly.stdout, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        // Catalog, index, page, 404 as JSON.
        let tracks = try Self.curl(["-f", "\(server.baseURL)/api/tracks"])
        #expect(tracks.status == 0)
        let index = try Self.curl(["-f", "\(server.baseURL)/api/index/adts.aac"])
        #expect(String(decoding: index.stdout, as: UTF8.self).contains("\"points\":[{\"t\":0,"))
        let page = try Self.curl(["-f", "\(server.baseURL)/"])
        #expect(String(decoding: page.stdout, as: UTF8.self).contains("<audio"))
        let missing = try Self.curl(["-w", "%{http_code}", "\(server.baseURL)/nope"])
        #expect(String(decoding: missing.stdout, as: UTF8.self).hasSuffix("404"))
        #expect(String(decoding: missing.stdout, as: UTF8.self).hasPrefix("{\"error\":"))
    }

    @Test func urlSession_getAndRange() async throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("track.m4a"))
        let server = try StreamdProcess(folder: library)
        let url = try #require(URL(string: "\(server.baseURL)/media/track.m4a"))
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(Array(data) == original)
        var request = URLRequest(url: url)
        request.setValue("bytes=1000-1999", forHTTPHeaderField: "Range")
        let (part, partial) = try await URLSession.shared.data(for: request)
        #expect((partial as? HTTPURLResponse)?.statusCode == 206)
        #expect(Array(part) == Array(original[1000..<2000]))
    }

    @Test func hundredRequestsOnOneConnection() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let original = try ServerEndToEndTests.bytes(of: library.appendingPathComponent("pcm16.wav"))
        let server = try StreamdProcess(folder: library)
        let c = try RawConnection(port: server.port)
        for i in 0..<100 {
            let start = i * 1000
            let r = try c.request("GET", "/media/pcm16.wav", headers: ["Range": "bytes=\(start)-\(start + 99)"])
            #expect(r.status == 206)
            #expect(r.body == Array(original[start..<(start + 100)]), "request \(i)")
        }
    }

    @Test func ffprobeFfmpegAndMpg123_playFromStreamd() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)
        let url = "\(server.baseURL)/media/vbr-v2.mp3"
        let probe = try runCommand(try #require(which("ffprobe")), ["-v", "error", "-show_entries", "format=duration",
                                                                      "-of", "csv=p=0", url])
        let duration = Double(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(probe.status == 0)
        #expect(abs((duration ?? 0) - 27.04) < 0.1)
        // mpg123 decodes the whole stream over HTTP, bit-exact with the local file.
        let dir = library.appendingPathComponent("decoded")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let mpg123 = try #require(which("mpg123"))
        let remote = try runCommand(mpg123, ["-q", "-w", dir.appendingPathComponent("remote.wav").path, url])
        let local = try runCommand(mpg123, ["-q", "-w", dir.appendingPathComponent("local.wav").path,
                                            library.appendingPathComponent("vbr-v2.mp3").path])
        #expect(remote.status == 0 && local.status == 0)
        let a = try Data(contentsOf: dir.appendingPathComponent("remote.wav"))
        let b = try Data(contentsOf: dir.appendingPathComponent("local.wav"))
        #expect(a == b, "mpg123 over HTTP decodes the same samples as from disk")
        // ffmpeg seeks with a Range request: 5 s of audio starting at 20 s of a 52 s track.
        let seek = try runCommand(try #require(which("ffmpeg")), ["-v", "error", "-ss", "20", "-i", "\(server.baseURL)/media/track.m4a",
                                                                   "-t", "5", "-f", "s16le", "-"])
        #expect(seek.status == 0)
        #expect(abs(seek.stdout.count - 5 * 44_100 * 4) <= 4096 * 4, "5 s of stereo s16 from the seek point")
        // The access log line comes through a pipe a moment after the response.
        #expect(TestTiming.waitUntil(timeout: 5) { server.log.contains("/media/track.m4a 206") },
                "ffmpeg's seek went out as a Range request")
    }
}

extension ServerEndToEndTests {
    /// A client that goes away in the middle of a response still leaves its access-log line,
    /// marked as cut short, with the bytes sent so far (a player that seeks or stops mid-file).
    @Test func responseCutShortByTheClient_isLoggedAsSuch() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // About 16 MiB of MP3 (one file repeated): more than the loopback socket buffers take,
        // so the response cannot finish before the client leaves.
        let track = try Data(contentsOf: TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"))
        var big = Data()
        while big.count < 16 << 20 { big.append(track) }
        try big.write(to: dir.appendingPathComponent("big.mp3"))
        let server = try StreamdProcess(folder: dir, waitForScan: false)
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        connection.send("GET /media/big.mp3 HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-\r\n\r\n")
        _ = connection.readSome(upTo: 65_536)
        connection.close()
        #expect(TestTiming.waitUntil(timeout: 5) { server.log.contains("GET /media/big.mp3 206") },
                "the unfinished response has its line: \(server.log)")
        let line = server.log.split(separator: "\n").first { $0.contains("GET /media/big.mp3 206") }.map(String.init) ?? ""
        #expect(line.hasSuffix("cut short"), "\(line)")
    }
}
