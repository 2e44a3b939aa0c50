#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// `--relay NAME=URL`: pulls a stream from another streamd or an Icecast server (plain HTTP) and
/// feeds it to the live channel NAME as its source, ICY titles carried through. Reconnects every
/// `retryNanos` while the upstream is away; blocking I/O on its own thread.
final class RelaySource: @unchecked Sendable {
    // @unchecked: `stopped` is guarded by `lock`; the rest is used by the relay thread only.
    let url: RelayURL
    let producer: LiveProducer
    let retryNanos: UInt64 = 2_000_000_000
    private let lock = NSLock()
    private var stopped = false

    /// An `http://host[:port]/path` URL taken apart.
    struct RelayURL: Sendable, Equatable {
        var host: String
        var port: Int
        var path: String

        static func parse(_ text: String) -> RelayURL? {
            guard text.lowercased().hasPrefix("http://") else { return nil }
            let rest = text.dropFirst("http://".count)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<slash]
            let path = slash < rest.endIndex ? String(rest[slash...]) : "/"
            var host = String(authority)
            var port = 80
            if let colon = authority.lastIndex(of: ":") {
                guard let value = Int(authority[authority.index(after: colon)...]), (1...65535).contains(value) else { return nil }
                port = value
                host = String(authority[..<colon])
            }
            guard !host.isEmpty, host.utf8.count <= 255, !host.contains("@"),
                  path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
            return RelayURL(host: host, port: port, path: path)
        }
    }

    init(url: RelayURL, producer: LiveProducer) {
        self.url = url
        self.producer = producer
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "radio-relay-\(producer.channel.name)"
        thread.start()
    }

    package func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func run() {
        while !isStopped {
            relayOnce()
            sleepNanos(retryNanos)
        }
    }

    /// One connection to the upstream, until it ends.
    private func relayOnce() {
        guard let fd = connectUpstream() else { return }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = "GET \(url.path) HTTP/1.1\r\nHost: \(url.host):\(url.port)\r\nIcy-MetaData: 1\r\nUser-Agent: streamd-relay\r\n\r\n"
        let sent = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.utf8.count else { return }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var pending: [UInt8] = []
        // The response head (at most 16 KiB).
        var headEnd: Int?
        while headEnd == nil, pending.count < 16 * 1024 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            pending += buffer[0..<n]
            headEnd = pending.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound
        }
        guard let bodyStart = headEnd else { return }
        let head = String(decoding: pending[..<bodyStart], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let status = lines.first, status.contains(" 200") else { return }
        func header(_ name: String) -> String? {
            for line in lines.dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1)
                if parts.count == 2, parts[0].lowercased() == name { return parts[1].trimmingCharacters(in: " \t") }
            }
            return nil
        }
        let type = header("content-type")?.lowercased() ?? "audio/mpeg"
        let codec: AudioFrameSplitter.Codec = type.contains("aac") ? .adts : .mpeg
        let chunked = header("transfer-encoding")?.lowercased().contains("chunked") ?? false
        var demuxer = header("icy-metaint").flatMap { Int($0) }.flatMap { try? ICYDemuxer(metaint: $0) }
        let station = StationInfo(name: header("icy-name") ?? producer.channel.name, genre: header("icy-genre"),
                                  url: header("icy-url"), description: header("icy-description"))
        let feed = SourceFeed()
        // The previous source may still be draining: wait for the mount to be free.
        var attached = false
        for _ in 0..<100 where !isStopped {
            if producer.attach(LiveProducer.AttachedSource(feed: feed, codec: codec, station: station,
                                                            kbps: header("icy-br").flatMap { Int($0) })) {
                attached = true
                break
            }
            sleepNanos(100_000_000)
        }
        guard attached else { return }
        defer { feed.close() }
        var decoder = ChunkedBodyDecoder()
        var body = Array(pending[bodyStart...])
        while !isStopped {
            var payload = body[...]
            if chunked {
                guard let (decoded, _) = try? decoder.feed(body[...]) else { return }
                payload = decoded[...]
            }
            if var icy = demuxer {
                for piece in icy.feed(payload) {
                    switch piece {
                    case .audio(let bytes): push(bytes[...], to: feed)
                    case .metadata(let text) where !text.isEmpty:
                        if let title = try? ICYMetadata.title(in: text[...]) { producer.setSourceTitle(title) }
                    case .metadata: break
                    }
                }
                demuxer = icy
            } else {
                push(payload, to: feed)
            }
            if chunked && decoder.isComplete { return }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            body = Array(buffer[0..<n])
        }
    }

    /// Hands bytes to the feed, waiting while it is full (the producer drains it in real time).
    private func push(_ bytes: ArraySlice<UInt8>, to feed: SourceFeed) {
        var rest = bytes
        while !rest.isEmpty, !isStopped {
            let room = feed.room
            if room == 0 {
                sleepNanos(50_000_000)
                continue
            }
            feed.append(rest.prefix(room))
            rest = rest.dropFirst(room)
        }
    }

    private func connectUpstream() -> Int32? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(url.host, String(url.port), &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd >= 0 {
                if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
                close(fd)
            }
            entry = info.pointee.ai_next
        }
        return nil
    }
}
