import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import StreamServer
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamHLS
@testable import StreamRadio
@testable import StreamShared

/// An upstream for a relay on loopback (IPv4 or IPv6): answers every connection with the same
/// bytes, then closes it, and keeps the request heads it got.
final class FakeUpstream: @unchecked Sendable {
    // @unchecked: `heads` and `stopped` are guarded by `lock`; `fd` is closed once the thread ends.
    let port: Int
    private let fd: Int32
    private let answer: [UInt8]
    private let lock = NSLock()
    private var heads: [String] = []
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    struct SetupError: Error {
        var call: String
    }

    init(ipv6: Bool, answer: [UInt8]) throws {
        self.answer = answer
        (fd, port) = try Self.listening(ipv6: ipv6)
        Thread.detachNewThread { [self] in
            serve()
            done.signal()
        }
    }

    /// A socket listening on the loopback address, and its port.
    private static func listening(ipv6: Bool) throws -> (Int32, Int) {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SetupError(call: "socket") }
        let bound: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            close(fd)
            throw SetupError(call: "bind/listen")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = withUnsafePointer(to: &storage) { pointer in
            ipv6 ? pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
                 : pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
        return (fd, port)
    }

    /// The request heads received so far, one per connection.
    var requests: [String] {
        lock.lock()
        defer { lock.unlock() }
        return heads
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func serve() {
        while !isStopped {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            var head: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while head.count < 65_536, head.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
                var wait = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                guard poll(&wait, 1, 2000) > 0 else { break }
                let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                head += buffer[0..<n]
            }
            lock.lock()
            heads.append(String(decoding: head, as: UTF8.self))
            lock.unlock()
            var sent = 0
            while sent < answer.count {
                let n = answer[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { break }
                sent += n
            }
            shutdown(client, Int32(SHUT_WR))
            close(client)
        }
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        done.wait()
        close(fd)
    }
}

/// streamd's relay against upstreams on loopback: what a good one sends comes through (audio,
/// titles, over IPv6 too), and a hostile one is refused with a typed error, never a trap or an
/// unbounded buffer; the relay then reports it once and keeps retrying.
@Suite struct RelayUpstreamTests {
    /// Three metaints of audio: the stream ends where the third block would start.
    static let audio: [UInt8] = (0..<48).map { UInt8($0) }
    static let title = "Artist - Title"

    /// A listener stream with metaint 16: a title after the first 16 bytes, "unchanged" after
    /// the next 16, then the rest.
    static var icyStream: [UInt8] {
        Array(audio[0..<16]) + ICYMetadata.encode(title: title) + Array(audio[16..<32]) + ICYMetadata.empty + Array(audio[32...])
    }

    static func read(_ url: String) throws -> (upstream: RelayUpstream, audio: [UInt8], titles: [String]) {
        let upstream = try RelayUpstream(url: try HTTPURL(url))
        var audio: [UInt8] = [], titles: [String] = []
        try upstream.pump(audio: { audio += $0 }, title: { titles.append($0) }, shouldStop: { false })
        return (upstream, audio, titles)
    }

    @Test func ipv6LoopbackUpstream_icyAudioAndTitles() throws {
        let head = "ICY 200 OK\r\nicy-name: Six\r\nicy-metaint: 16\r\nContent-Type: audio/aacp\r\n\r\n"
        let upstream = try FakeUpstream(ipv6: true, answer: Array(head.utf8) + Self.icyStream)
        defer { upstream.stop() }
        let (relay, audio, titles) = try Self.read("http://[::1]:\(upstream.port)/radio/main")
        #expect(audio == Self.audio && titles == [Self.title])
        #expect(relay.head["icy-name"] == "Six" && relay.codec == .adts)
        let request = try #require(upstream.requests.first)
        #expect(request.hasPrefix("GET /radio/main HTTP/1.1\r\nHost: [::1]:\(upstream.port)\r\n"), "\(request)")
        #expect(request.contains("\r\nIcy-MetaData: 1\r\n"))
    }

    @Test func chunkedUpstream_isDechunked() throws {
        let stream = Self.icyStream
        var chunked: [UInt8] = []
        for start in stride(from: 0, to: stream.count, by: 7) {
            let piece = stream[start..<min(stream.count, start + 7)]
            chunked += Array(String(piece.count, radix: 16).utf8) + [0x0D, 0x0A] + piece + [0x0D, 0x0A]
        }
        chunked += Array("0\r\n\r\n".utf8)
        let body = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nicy-metaint: 16\r\n\r\n"
        let upstream = try FakeUpstream(ipv6: false, answer: Array(body.utf8) + chunked)
        defer { upstream.stop() }
        let (relay, audio, titles) = try Self.read("http://127.0.0.1:\(upstream.port)/")
        #expect(audio == Self.audio && titles == [Self.title])
        #expect(relay.codec == .mpeg)
    }

    @Test func upstreamWithoutMetadata_isAllAudio() throws {
        let upstream = try FakeUpstream(ipv6: false, answer: Array("HTTP/1.0 200 OK\r\n\r\n".utf8) + Self.audio)
        defer { upstream.stop() }
        let (_, audio, titles) = try Self.read("http://127.0.0.1:\(upstream.port)/")
        #expect(audio == Self.audio && titles.isEmpty)
    }

    /// Head problems are refused before the relay attaches to its channel.
    @Test(arguments: [
        ("SSH-2.0-OpenSSH_9.6\r\n\r\n", RelayError.malformedHead(.badStatusLine)),
        ("\u{16}\u{3}\u{1}\u{2}\u{1}\u{fc}\u{3}\u{3}\r\n\r\n", .malformedHead(.badStatusLine)),
        ("HTTP/1.1 200 OK\r\nX: a\u{0}b\r\n\r\n", .malformedHead(.badCharacter)),
        ("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", .refused(status: 404, reason: "Not Found")),
        ("HTTP/1.1 200 OK\r\nicy-metaint: 0\r\n\r\n", .badMetaint(.badMetaint("0"))),
        ("HTTP/1.1 200 OK\r\nicy-metaint: -16\r\n\r\n", .badMetaint(.badMetaint("-16"))),
        ("ICY 200 OK\r\nicy-metaint: 99999999999\r\n\r\n", .badMetaint(.badMetaint("99999999999"))),
        ("ICY 200 OK\r\nicy-metaint: lots\r\n\r\n", .badMetaint(.badMetaint("lots"))),
        ("HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\n", .malformedHead(.badContentLength)),
        ("HTTP/1.1 200 OK\r\nicy-name: cut", .closedBeforeHead),
    ])
    func hostileHead_isATypedError(answer: String, error: RelayError) throws {
        let upstream = try FakeUpstream(ipv6: false, answer: Array(answer.utf8))
        defer { upstream.stop() }
        #expect(throws: error) { try RelayUpstream(url: try HTTPURL("http://127.0.0.1:\(upstream.port)/")) }
    }

    /// A head that never ends is refused at `HTTPResponseHead.maxHeadBytes`, not buffered on.
    @Test func endlessHead_isRefusedAtItsLimit() throws {
        let answer = Array("HTTP/1.1 200 OK\r\nX-Pad: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 200_000)
        let upstream = try FakeUpstream(ipv6: false, answer: answer)
        defer { upstream.stop() }
        #expect(throws: RelayError.malformedHead(.headTooLarge)) { try RelayUpstream(url: try HTTPURL("http://127.0.0.1:\(upstream.port)/")) }
    }

    /// The largest block a length byte can announce (255 × 16 bytes), filled with binary audio
    /// instead of text: the checked reader refuses it after the audio before it went through.
    @Test func oversizedBinaryMetadataBlock_breaksTheStream() throws {
        let binary = (0..<(255 * 16)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let stream = Array(Self.audio[0..<16]) + [0xFF] + binary + Self.audio
        let upstream = try FakeUpstream(ipv6: true, answer: Array("ICY 200 OK\r\nicy-metaint: 16\r\n\r\n".utf8) + stream)
        defer { upstream.stop() }
        let relay = try RelayUpstream(url: try HTTPURL("http://[::1]:\(upstream.port)/"))
        var audio: [UInt8] = []
        do {
            try relay.pump(audio: { audio += $0 }, title: { _ in }, shouldStop: { false })
            Issue.record("no error")
        } catch {
            guard case .badStream(.notMetadata(audioOffset: 16, _)) = error else { Issue.record("\(error)"); return }
        }
        #expect(audio == Array(Self.audio[0..<16]))
    }

    /// End to end in streamd's radio service: the relay attaches, the stream breaks, one warning
    /// names the upstream and the problem, and the relay keeps reconnecting (without repeating it).
    @Test func hostileUpstream_isReportedOnce_andRetried() throws {
        let stream = Array(Self.audio[0..<16]) + [0x02] + Array("\u{1}not a title at all, just bytes!".utf8) + Self.audio
        let upstream = try FakeUpstream(ipv6: true, answer: Array("ICY 200 OK\r\nicy-metaint: 16\r\n\r\n".utf8) + stream)
        defer { upstream.stop() }
        let warnings = Warnings()
        let service = RadioService(settings: RadioSettings()) { warnings.add($0) }
        defer { service.stop() }
        try service.addRelay(name: "copy", url: "http://[::1]:\(upstream.port)/radio/main")
        let deadline = Date().addingTimeInterval(20)
        while upstream.requests.count < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        #expect(upstream.requests.count >= 3, "the relay reconnects every 2 s")
        #expect(service.channel(named: "copy") != nil, "the channel stays")
        let lines = warnings.lines
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains("relay copy from http://[::1]:\(upstream.port)/radio/main: icy: the metadata block") == true,
                "\(lines)")
        #expect(throws: ChannelTracks.Failure.self) { try service.addRelay(name: "bad", url: "http://[::1/") }
    }

    final class Warnings: @unchecked Sendable {
        private let lock = NSLock()
        private var all: [String] = []
        func add(_ line: String) { lock.withLock { all.append(line) } }
        var lines: [String] { lock.withLock { all } }
    }
}
