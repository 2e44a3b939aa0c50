import Glibc
import StreamClient

/// The interactive terminal: a status line and single-key commands (space pause, ←/→ seek
/// ±10 s, +/- volume, [/] rate, {/} pitch, q quit). Off when stdin/stdout are not a terminal.
final class TerminalUI: @unchecked Sendable {
    // @unchecked: `saved` and `running` are set before the threads start and after they stop.
    private let player: Player
    private let enabled: Bool
    private var saved = termios()
    private var running = false
    private let stopFlag = ConditionLock()
    private var stopped = false

    init(player: Player, enabled: Bool) {
        self.player = player
        self.enabled = enabled
    }

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
        stopFlag.withLock { stopped = true }
        tcsetattr(0, TCSANOW, &saved)
        Self.write("\n")
        running = false
    }

    private var isStopped: Bool { stopFlag.withLock { stopped } }

    private func readKeys() {
        var escape: [UInt8] = []
        while !isStopped {
            var byte: UInt8 = 0
            guard read(0, &byte, 1) == 1 else { return }
            if !escape.isEmpty || byte == 0x1B {
                escape.append(byte)
                if escape.count == 3 {
                    if escape == [0x1B, 0x5B, 0x43] { player.seek(by: 10) }
                    if escape == [0x1B, 0x5B, 0x44] { player.seek(by: -10) }
                    escape.removeAll()
                }
                continue
            }
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
            let (position, duration) = player.progress
            let fill = player.bufferCapacity > 0 ? player.bufferFill * 100 / player.bufferCapacity : 0
            let state = player.isPaused ? "paused " : "playing"
            let line = "\r\(state) \(Self.clock(position)) / \(duration.map(Self.clock) ?? "?:??")  buffer \(fill)%  volume \(Int((player.volume * 100).rounded()))%"
                + "  rate \(Self.rateText(player.rate))×  pitch \(Self.pitchText(player.semitones))  eq \(player.eq)   "
            Self.write(line)
            Monotonic.sleep(seconds: 0.25)
        }
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
