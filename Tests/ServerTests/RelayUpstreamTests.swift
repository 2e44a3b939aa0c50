import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif
@testable import StreamServer
@testable import StreamHTTP
@testable import StreamLibrary
@testable import StreamHLS
@testable import StreamRadio
@testable import StreamShared

/// streamd's relay against upstreams on loopback: what a good one sends comes through (audio,
/// titles, over IPv6 too), and a hostile one is refused with a typed error, never a trap or an
/// unbounded buffer; the relay then reports it once and keeps retrying.
@Suite(.ownThreads) struct RelayUpstreamTests {
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
        let upstream = try FakeHTTPServer(always: .init(bytes: Array(head.utf8) + Self.icyStream), ipv6: true)
        defer { upstream.stop() }
        let (relay, audio, titles) = try Self.read("http://[::1]:\(upstream.port)/radio/main")
        #expect(audio == Self.audio && titles == [Self.title])
        #expect(relay.head["icy-name"] == "Six" && relay.codec == .adts)
        let request = try #require(upstream.requests.first)
        #expect(request.hasPrefix("GET /radio/main HTTP/1.1\r\nHost: [::1]:\(upstream.port)\r\n"), "\(request)")
        #expect(request.contains("\r\nIcy-MetaData: 1\r\n"))
    }

    /// The upstream's Content-Type picks the channel's codec as a source's does: Ogg (with
    /// parameters, any case) is passed page by page; unknown types stay MP3 unless they say AAC.
    @Test(arguments: [("audio/ogg", AudioFrameSplitter.Codec.ogg), ("application/ogg", .ogg), ("Audio/Ogg; codecs=opus", .ogg),
                      ("audio/opus", .ogg), ("audio/vorbis", .ogg), ("audio/aacp", .adts), ("audio/x-aac", .adts),
                      ("audio/mpeg", .mpeg), ("audio/x-weird-aac", .adts), ("application/octet-stream", .mpeg)])
    func upstreamContentType_namesTheCodec(_ type: String, _ codec: AudioFrameSplitter.Codec) throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: 4\r\n\r\nOggS"
        let upstream = try FakeHTTPServer(always: .init(bytes: Array(head.utf8)))
        defer { upstream.stop() }
        let (relay, audio, _) = try Self.read("http://127.0.0.1:\(upstream.port)/up.ogg")
        #expect(relay.codec == codec, "\(type)")
        #expect(audio == Array("OggS".utf8))
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
        let upstream = try FakeHTTPServer(always: .init(bytes: Array(body.utf8) + chunked))
        defer { upstream.stop() }
        let (relay, audio, titles) = try Self.read("http://127.0.0.1:\(upstream.port)/")
        #expect(audio == Self.audio && titles == [Self.title])
        #expect(relay.codec == .mpeg)
    }

    @Test func upstreamWithoutMetadata_isAllAudio() throws {
        let upstream = try FakeHTTPServer(always: .init(bytes: Array("HTTP/1.0 200 OK\r\n\r\n".utf8) + Self.audio))
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
        let upstream = try FakeHTTPServer(always: .init(bytes: Array(answer.utf8)))
        defer { upstream.stop() }
        #expect(throws: error) { try RelayUpstream(url: try HTTPURL("http://127.0.0.1:\(upstream.port)/")) }
    }

    /// A head that never ends is refused at `HTTPResponseHead.maxHeadBytes`, not buffered on.
    @Test func endlessHead_isRefusedAtItsLimit() throws {
        let answer = Array("HTTP/1.1 200 OK\r\nX-Pad: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 200_000)
        let upstream = try FakeHTTPServer(always: .init(bytes: answer))
        defer { upstream.stop() }
        #expect(throws: RelayError.malformedHead(.headTooLarge)) { try RelayUpstream(url: try HTTPURL("http://127.0.0.1:\(upstream.port)/")) }
    }

    /// The largest block a length byte can announce (255 × 16 bytes), filled with binary audio
    /// instead of text: the checked reader refuses it after the audio before it went through.
    @Test func oversizedBinaryMetadataBlock_breaksTheStream() throws {
        let binary = (0..<(255 * 16)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let stream = Array(Self.audio[0..<16]) + [0xFF] + binary + Self.audio
        let upstream = try FakeHTTPServer(always: .init(bytes: Array("ICY 200 OK\r\nicy-metaint: 16\r\n\r\n".utf8) + stream), ipv6: true)
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
        let upstream = try FakeHTTPServer(always: .init(bytes: Array("ICY 200 OK\r\nicy-metaint: 16\r\n\r\n".utf8) + stream), ipv6: true)
        defer { upstream.stop() }
        let warnings = CapturedLog()
        let service = RadioService(settings: RadioSettings(), logger: warnings.logger)
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
}
