import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A loopback server that answers every connection with the same bytes and closes: a SHOUTcast
/// server (`ICY 200 OK`), a chunked one, a broken one, as streamplay meets them.
final class CannedHTTPServer: @unchecked Sendable {
    // @unchecked: the listener is closed once (guarded by `lock`); the bytes never change.
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var closed = false

    init(answer: [UInt8]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw TestFailure("canned server: bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread { [listener] in
            for _ in 0..<32 {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                Thread.detachNewThread { Self.answer(client, with: answer) }
            }
        }
    }

    private static func answer(_ client: Int32, with bytes: [UInt8]) {
        defer { close(client) }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while head.count < 65_536, !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(client, &byte, 1, 0) == 1 else { return }
            head.append(byte)
        }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(client, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    func stop() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    deinit { stop() }
}

/// streamplay's own HTTP client from the command line: a SHOUTcast answer and a chunked one play
/// bit for bit; a malformed answer is a clear error with the network exit status.
@Suite struct HTTPClientPlayerTests {
    /// Plays the canned answer `answerHead` + `body(file)` to a WAV; the samples must equal
    /// mpg123's decode of the file (all of them, or the first `seconds` of a live stream).
    static func playsBitExact(answerHead: String, seconds: Double? = nil, body: (Data) -> [UInt8]) throws {
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        let bytes = try Data(contentsOf: file)
        let server = try CannedHTTPServer(answer: Array(answerHead.utf8) + body(bytes))
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
        let server = try CannedHTTPServer(answer: Array(answer.utf8))
        defer { server.stop() }
        let run = try runCommand(PlayerTests.streamplay, ["http://127.0.0.1:\(server.port)/x", "--output", "null"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "network exit status: \(stderr)")
        #expect(stderr.contains("malformed HTTP response"), "\(stderr)")
    }
}
