import Glibc
import StreamClient
import StreamShared

/// The interactive terminal: a status line and single-key commands (space pause, ←/→ seek
/// ±10 s, +/- volume, [/] rate, {/} pitch, q quit). Off when stdin/stdout are not a terminal.
final class TerminalUI: @unchecked Sendable {
    // @unchecked: `saved` and `running` are set before the threads start and after they stop.
    /// The one track played, or nil for a queue (whose current player changes per track).
    private let single: Player?
    private let queue: QueuePlayer?
    private let enabled: Bool
    private var saved = termios()
    private var running = false
    private let stopFlag = Lock(())
    private var stopped = false
    /// A key's answer shown in the status line until then ("live stream: cannot seek").
    private var notice: (text: String, until: Monotonic)?

    init(player: Player, enabled: Bool) {
        single = player
        queue = nil
        self.enabled = enabled
    }

    /// A queue: the keys act on the track playing, n and p move through the queue, and the
    /// status line starts with `3/12  Artist - Title  1:23/4:56`.
    init(queue: QueuePlayer, enabled: Bool) {
        single = nil
        self.queue = queue
        self.enabled = enabled
    }

    /// The player the keys and the status line are about right now (none between tracks).
    private var current: Player? { single ?? queue?.currentPlayer }

    func start() {
        guard enabled else { return }
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(0, TCSANOW, &raw)
        running = true
        // Without its threads the player still plays; only the keys and the status line are lost.
        try? NativeThread.detach(name: "streamplay-keys") { [self] in readKeys() }
        try? NativeThread.detach(name: "streamplay-status") { [self] in drawStatus() }
    }

    func stop() {
        guard running else { return }
        stopFlag.withLock { _ in stopped = true }
        tcsetattr(0, TCSANOW, &saved)
        Self.write("\n")
        running = false
    }

    private var isStopped: Bool { stopFlag.withLock { _ in stopped } }

    private func readKeys() {
        var escape: [UInt8] = []
        while !isStopped {
            var byte: UInt8 = 0
            guard read(0, &byte, 1) == 1 else { return }
            if !escape.isEmpty || byte == 0x1B {
                escape.append(byte)
                if escape.count == 3 {
                    let arrow: Double? = escape == [0x1B, 0x5B, 0x43] ? 10 : escape == [0x1B, 0x5B, 0x44] ? -10 : nil
                    if let arrow, let player = current {
                        if let reason = player.cannotSeekReason {
                            stopFlag.withLock { _ in notice = (reason, Monotonic.now.adding(seconds: 3)) }
                        } else {
                            player.seek(by: arrow)
                        }
                    }
                    escape.removeAll()
                }
                continue
            }
            if let queue {
                switch byte {
                case UInt8(ascii: "n"): queue.next(); continue
                case UInt8(ascii: "p"): queue.previous(); continue
                case UInt8(ascii: "q"): queue.quit(); continue
                default: break
                }
            }
            guard let player = current else { continue }
            switch byte {
            case UInt8(ascii: " "): player.togglePause()
            case UInt8(ascii: "+"), UInt8(ascii: "="): player.setVolume(player.volume + 0.1)
            case UInt8(ascii: "-"): player.setVolume(player.volume - 0.1)
            case UInt8(ascii: "["): player.setRate(Self.nextRate(player.rate, up: false))
            case UInt8(ascii: "]"): player.setRate(Self.nextRate(player.rate, up: true))
            case UInt8(ascii: "{"): player.setPitch(semitones: (player.semitones - 1).rounded())
            case UInt8(ascii: "}"): player.setPitch(semitones: (player.semitones + 1).rounded())
            case UInt8(ascii: "q"): player.stop()
            default: break
            }
        }
    }

    private func drawStatus() {
        while !isStopped {
            guard let player = current else {
                Monotonic.sleep(seconds: 0.05)
                continue
            }
            let (position, duration) = player.progress
            let fill = player.bufferCapacity > 0 ? player.bufferFill * 100 / player.bufferCapacity : 0
            let state = player.isPaused ? "paused " : "playing"
            let live = player.liveStream
            let length = live != nil ? "live" : duration.map(Self.clock) ?? "?:??"
            let shown = stopFlag.withLock { (_) -> String? in
                guard let notice, Monotonic.now.seconds(since: notice.until) < 0 else { return nil }
                return notice.text
            }
            let line = "\r" + queueText(player, position: position, duration: duration) + "\(state) \(Self.clock(position)) / \(length)"
                + (single != nil ? liveText(player, live) : "") + (shown.map { "  [\($0)]" } ?? "")
                + "  buffer \(fill)%  volume \(Int((player.volume * 100).rounded()))%"
                + "  rate \(Self.rateText(player.rate))×  pitch \(Self.pitchText(player.semitones))  eq \(player.eq)   "
            Self.write(line)
            Monotonic.sleep(seconds: 0.25)
        }
    }

    /// `  Station: Artist - Title` for one live stream (the ICY title as it changes).
    private func liveText(_ player: Player, _ live: LiveStreamInfo?) -> String {
        guard let live else { return "" }
        let title = player.streamTitle.flatMap { $0.isEmpty ? nil : $0 }
        let parts = [live.station, title].compactMap { $0 }
        return parts.isEmpty ? "" : "  " + parts.joined(separator: ": ")
    }

    /// `3/12  Artist - Title  1:23/4:56  ` for a queue; nothing for one track.
    private func queueText(_ player: Player, position: Double, duration: Double?) -> String {
        guard let queue, let now = queue.nowPlaying else { return "" }
        let tags = player.playedTags
        let name = now.url.split(separator: "/").last.map(String.init) ?? now.url
        let title = [tags?.artist, tags?.title ?? name].compactMap { $0 }.joined(separator: " - ")
        let length = player.liveStream != nil ? "live" : duration.map(Self.clock) ?? "?:??"
        return "\(now.number)/\(now.count)  \(title)  \(Self.clock(position))/\(length)  "
    }

    /// Writes `text` to stdout at once (the status line has no newline to flush it).
    private static func write(_ text: String) { StandardStream.output.write(text) }

    /// The rate steps the keys walk: 0.1× … 16×.
    static let rateSteps: [Double] = [0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 6, 8, 12, 16]

    static func nextRate(_ rate: Double, up: Bool) -> Double {
        up ? rateSteps.first(where: { $0 > rate + 1e-9 }) ?? 16 : rateSteps.last(where: { $0 < rate - 1e-9 }) ?? 0.1
    }

    static func rateText(_ rate: Double) -> String {
        rate == rate.rounded() ? String(Int(rate)) : printfFormat("%g", rate)
    }

    static func pitchText(_ semitones: Double) -> String {
        semitones == 0 ? "0" : (semitones > 0 ? "+" : "") + String(Int(semitones.rounded())) + " st"
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds)
        let s = total % 60
        return "\(total / 60):\(s < 10 ? "0" : "")\(s)"
    }
}
