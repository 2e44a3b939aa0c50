import StreamShared

/// What a response head says about a stream that never ends: a radio station (SHOUTcast's
/// `ICY 200 OK` status line, or Icecast's and streamd's `icy-*` headers, and no length). Such a
/// stream has no duration and cannot seek, and a dropped one is joined again live, without Range.
public struct LiveStreamInfo: Sendable, Equatable {
    /// `icy-metaint`: the server puts a metadata block after every this many audio bytes.
    public var metaint: Int?
    /// `icy-name`, `icy-genre`, `icy-br` (kbit/s).
    public var station: String?
    public var genre: String?
    public var bitrateKbps: Int?

    /// The stream facts of a 200 (or ICY 200) response, nil for an ordinary resource (one that
    /// has a length, or no sign of a station). Throws when `icy-metaint` is not a byte count.
    public static func detect(statusLine: String, headers: [(name: String, value: String)]) throws(ICYStreamError) -> LiveStreamInfo? {
        func value(_ name: String) -> String? {
            headers.last { $0.name.lowercased() == name }.map { header in
                var text = Substring(header.value)
                while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
                while let last = text.last, last == " " || last == "\t" || last == "\r" || last == "\n" { text.removeLast() }
                return String(text)
            }
        }
        let icyStatus = statusLine.hasPrefix("ICY ")
        let stationHeaders = headers.contains { $0.name.lowercased().hasPrefix("icy-") || $0.name.lowercased() == "ice-audio-info" }
        guard icyStatus || stationHeaders, value("content-length") == nil else { return nil }
        var info = LiveStreamInfo()
        if let metaint = value("icy-metaint") { info.metaint = try ICYStreamReader.metaint(header: metaint) }
        info.station = value("icy-name").map { String($0.prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        info.genre = value("icy-genre").map { String($0.prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        info.bitrateKbps = value("icy-br").flatMap { Int($0.prefix(6).prefix { $0.isNumber }) }
        return info
    }
}

/// A title change heard in a live stream, for `--stats`.
public struct StreamTitleChange: Sendable, Equatable {
    /// Playing position (seconds) when the title took effect.
    public var atSeconds: Double
    public var title: String
}

/// What the network thread learns about a live stream, for the decode thread: the stream facts
/// of the current response, title updates at their stream offsets, and the gaps of reconnects.
public final class LiveStreamState: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = Lock(())
    private var current: LiveStreamInfo?
    private var updates: [(offset: Int, update: ICYStreamReader.Update)] = []
    private var gaps: [Double] = []

    public init() {}

    /// The facts of the live response, nil until one arrived (or for an ordinary resource).
    public var info: LiveStreamInfo? { lock.withLock { _ in current } }

    func begin(_ info: LiveStreamInfo) { lock.withLock { _ in current = info } }

    /// A metadata block that takes effect at stream (throttle) offset `offset`. At most 64 wait:
    /// a player that does not read (paused) cannot make a flood of titles grow memory.
    func post(_ update: ICYStreamReader.Update, at offset: Int) {
        lock.withLock { _ in
            if updates.count >= 64 { updates.removeFirst() }
            updates.append((offset, update))
        }
    }

    /// The updates that take effect at or before stream offset `offset` (the end of the bytes read).
    func take(through offset: Int) -> [ICYStreamReader.Update] {
        lock.withLock { _ in
            let due = updates.prefix { $0.offset <= offset }
            updates.removeFirst(due.count)
            return due.map(\.update)
        }
    }

    func recordGap(milliseconds: Double) { lock.withLock { _ in gaps.append(milliseconds) } }

    /// Milliseconds between the last byte of a dropped connection and the first audio of the next.
    public var gapsMilliseconds: [Double] { lock.withLock { _ in gaps } }
}
