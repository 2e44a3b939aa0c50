import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// streamplay's own HTTP client from the command line: a SHOUTcast answer and a chunked one play
/// bit for bit; a malformed answer is a clear error with the network exit status.
@Suite(.ownThreads) struct HTTPClientPlayerTests {
    /// Plays the canned answer `answerHead` + `body(file)` to a WAV; the samples must equal
    /// mpg123's decode of the file (all of them, or the first `seconds` of a live stream).
    static func playsBitExact(answerHead: String, seconds: Double? = nil, body: (Data) -> [UInt8]) throws {
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let bytes = try Data(contentsOf: file)
        let server = try FakeHTTPServer(always: .init(bytes: Array(answerHead.utf8) + body(bytes)))
        defer { server.stop() }
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let limit = seconds.map { ["--duration", "\($0)"] } ?? []
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(server.port)/stream", "--output", "wav:\(ours)"] + limit)
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, file.path])
        let played = try wavSamples(ours), expected = try wavSamples(reference)
        if seconds == nil {
            #expect(played == expected, "the stream plays bit for bit")
        } else {
            #expect(played.count > 44_100 && played.count < expected.count, "\(played.count) samples")
            #expect(played == Array(expected.prefix(played.count)), "the live stream's start plays bit for bit")
        }
    }

    @Test func shoutcastICYAnswer_plays() throws {
        // A station: endless by nature, so it is played for 2 s.
        try Self.playsBitExact(answerHead: "ICY 200 OK\r\nicy-name: Test FM\r\ncontent-type: audio/mpeg\r\nicy-br: 128\r\n\r\n",
                               seconds: 2) { Array($0) }
    }

    @Test func chunkedAnswer_plays() throws {
        try Self.playsBitExact(answerHead: "HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nTransfer-Encoding: chunked\r\n\r\n") { data in
            var body: [UInt8] = []
            var offset = 0
            var size = 1
            while offset < data.count {
                let n = min(size, data.count - offset)
                body += Array(String(n, radix: 16).utf8) + [13, 10] + data[offset..<(offset + n)] + [13, 10]
                offset += n
                size = size * 3 % 40_000 + 1      // chunks of every size, 1 byte to 40 KB
            }
            return body + Array("0\r\n\r\n".utf8)
        }
    }

    @Test(arguments: ["HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\n", "HTTP/7.0 200 OK\r\n\r\n",
                      "HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"])
    func malformedAnswer_isAClearError(answer: String) throws {
        let server = try FakeHTTPServer(always: .init(bytes: Array(answer.utf8)))
        defer { server.stop() }
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(server.port)/x", "--output", "null"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "network exit status: \(stderr)")
        #expect(stderr.contains("malformed HTTP response"), "\(stderr)")
    }
}
