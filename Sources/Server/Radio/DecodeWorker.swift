#if canImport(Glibc)
import Glibc
#endif
import Foundation
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// The child side of a transcoding channel's decoding: `streamd decode-worker` reads one
/// request on stdin (a track and the channel's channel count), decodes it with `LocalTrackPCM`
/// and writes the samples to stdout as they come, blocking when the pipe is full, so it runs
/// just ahead of the channel. libmpg123 or libfaad2 crashing on a crafted frame, or our code
/// trapping, ends this process only; the channel logs it and plays the next track.
///
/// Messages are `AnalyzerProtocol` frames (32-bit little-endian length, payload). The worker
/// says `hello`, then answers the request with sample frames (`0`, the rate as u32 LE, floats
/// in host byte order: both ends are this machine's streamd), then `1` at the end of the track
/// or `2` and the decoder's error message.
public enum DecodeWorker {
    /// The hidden subcommand that runs the worker.
    public static let subcommand = "decode-worker"
    /// The worker's own option for fault drills (`streamd decode-worker --fault SPEC`): SPEC
    /// `trap:NAME,hang:NAME` makes the worker trap or spin on files of that name after their
    /// first samples (a decoder that crashes or loops mid-track), `garbage:NAME` send a frame of
    /// no known kind then, `slow:NAME` decode it slowly.
    /// The server never passes it.
    public static let faultOption = "--fault"
    package static let hello = Array("streamd-decoder/1".utf8)
    /// The most samples one frame from the worker may carry (a unit is at most 4096 frames of
    /// two channels; the rest is room).
    static let maxSamples = 1 << 18

    /// How workers are started and bounded.
    public struct Settings: Sendable {
        /// The program to run; `/proc/self/exe` is streamd itself.
        public var executable = "/proc/self/exe"
        public var arguments = [DecodeWorker.subcommand]
        /// Time a worker has to start and answer with its first samples (or its refusal).
        public var startSeconds: Double = 10
        /// Time the next samples may take once the channel asks for them (a healthy decoder
        /// has them in the pipe already).
        public var unitSeconds: Double = 10
        /// Variables set for the workers on top of the server's environment.
        public var environment: [String: String] = [:]
        /// True once the server stops: a wait for samples ends (the worker killed and reaped)
        /// within a quarter of a second instead of its time bound.
        package var isCancelled: @Sendable () -> Bool = { false }

        public init() {}
    }

    enum Kind: UInt8 {
        case samples = 0, end = 1, failure = 2
    }

    /// The request: channels, the analysis' hints, the path.
    static func request(path: String, hints: TrackDecoder.Hints, channels: Int, start: DecodeStart = DecodeStart()) -> [UInt8] {
        var payload: [UInt8] = [UInt8(clamping: channels)]
        for value in [hints.audioStart, hints.audioEnd, hints.encoderDelay, hints.encoderPadding, hints.totalSamples,
                      start.sample, start.pointByte, start.pointSample] {
            let bits = UInt64(bitPattern: Int64(value))
            for shift in stride(from: 0, to: 64, by: 8) { payload.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
        return AnalyzerProtocol.frame(payload + Array(path.utf8))
    }

    package static func parseRequest(_ payload: [UInt8]) throws(FormatError) -> (path: String, hints: TrackDecoder.Hints, channels: Int, start: DecodeStart) {
        var reader = ByteReader(payload, component: "decoder request")
        let channels = Int(try reader.readU8())
        guard channels == 1 || channels == 2 else {
            throw .invalid(component: "decoder request", reason: "\(channels) channels", offset: 0)
        }
        var values: [Int] = []
        for _ in 0..<8 { values.append(Int(Int64(bitPattern: try reader.readU64LE()))) }
        let hints = TrackDecoder.Hints(audioStart: values[0], audioEnd: values[1], encoderDelay: values[2],
                                       encoderPadding: values[3], totalSamples: values[4])
        guard values[5] >= 0 else { throw .invalid(component: "decoder request", reason: "start sample \(values[5])", offset: 0) }
        let start = DecodeStart(sample: values[5], pointByte: values[6], pointSample: values[7])
        return (String(decoding: reader.rest, as: UTF8.self), hints, channels, start)
    }

    /// Decodes the one requested track; returns the process exit status. `faultSpec` is the
    /// worker's `--fault` (empty: none).
    public static func run(faultSpec: String = "") -> Int32 {
        WorkerSide.becomeExpendable()
        guard WorkerSide.writeAll(AnalyzerProtocol.frame(hello)) else { return 1 }
        var requests = WorkerRequests(chunkBytes: 4096)
        let payload: [UInt8]
        do {
            guard let request = try requests.next() else { return 0 }   // the server went away before asking
            payload = request
        } catch {
            return 2
        }
        if payload.first == waveformRequestTag { return runWaveform(payload, faultSpec: faultSpec) }
        guard let parsed = try? parseRequest(payload) else { return 2 }
        let (path, hints, channels, start) = parsed
        let fault = Fault(faultSpec, path: path)
        var samples: [Float] = []
        do {
            let pcm = try LocalTrackPCM(path: path, hints: hints, channels: channels, start: start)
            var units = 0
            while true {
                samples.removeAll(keepingCapacity: true)
                // A second line of defence: a decoder that loops ends even if the server is gone.
                alarm(60)
                let rate = try pcm.next(into: &samples)
                alarm(0)
                guard let rate else { break }
                if units == 1 {
                    fault.inject()
                    // `garbage:NAME`: a frame of a kind no worker sends, as a corrupted worker might.
                    if fault.garbage { _ = WorkerSide.writeAll(AnalyzerProtocol.frame([0x7F, 1, 2, 3])) }
                }
                fault.pace()
                units += 1
                var start = 0
                // One unit is a few thousand samples; a larger one goes in pieces of whole frames.
                let piece = maxSamples - maxSamples % channels
                while start < samples.count {
                    let end = min(samples.count, start + piece)
                    guard WorkerSide.writeAll(message(rate: rate, samples[start..<end])) else { return 1 }
                    start = end
                }
            }
        } catch {
            return WorkerSide.writeAll(AnalyzerProtocol.frame([Kind.failure.rawValue] + Array("\(error)".utf8))) ? 0 : 1
        }
        return WorkerSide.writeAll(AnalyzerProtocol.frame([Kind.end.rawValue])) ? 0 : 1
    }

    static func message(rate: Int, _ samples: ArraySlice<Float>) -> [UInt8] {
        var payload: [UInt8] = [Kind.samples.rawValue]
        payload.reserveCapacity(5 + samples.count * 4)
        let bits = UInt32(clamping: rate)
        for shift in stride(from: 0, to: 32, by: 8) { payload.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
        samples.withUnsafeBytes { payload.append(contentsOf: $0) }
        return AnalyzerProtocol.frame(payload)
    }

    /// The `--fault` for this file, if `spec` names it.
    struct Fault {
        var trap = false
        var hang = false
        /// `slow:NAME`: 20 ms per unit of samples (a decoder on a loaded machine), so tests can
        /// hold an encode in progress.
        var slow = false
        var garbage = false

        init(_ spec: String, path: String) {
            let name = path.split(separator: "/").last.map(String.init) ?? path
            for item in spec.split(separator: ",") {
                let parts = item.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[1] == name else { continue }
                if parts[0] == "trap" { trap = true }
                if parts[0] == "hang" { hang = true }
                if parts[0] == "slow" { slow = true }
                if parts[0] == "garbage" { garbage = true }
            }
        }

        func pace() {
            if slow { usleep(20_000) }
        }

        func inject() {
            if trap {
                // A trap as a decoder bug would make one: a Double too large for Int.
                let ticks = Double(UInt64.max) * 2
                if Int(ticks) != 0 { return }
            }
            if hang {
                while true { sched_yield() }
            }
        }
    }
}

/// Where a worker's decoding starts: at `sample` (per channel, of the trimmed track), from the
/// seek-index point at byte `pointByte` (its exact sample `pointSample`; -1: none, decode from the start).
package struct DecodeStart: Sendable, Equatable {
    package var sample = 0
    package var pointByte = -1
    package var pointSample = -1
}

/// Why a track's decoder worker gave no samples.
struct DecodeWorkerError: Error, CustomStringConvertible {
    var description: String
    /// The worker crashed, overran or spoke nonsense (not the decoder's own refusal): the file
    /// is not tried again until it changes.
    var quarantines = false
}

/// A track decoded by a `streamd decode-worker` process: started per track, read as the
/// channel needs samples (each within `unitSeconds`), killed and reaped when the track ends
/// or the channel lets it go. A worker that dies, overruns or says nonsense is a thrown
/// `DecodeWorkerError` naming how it ended: the channel skips the track and the server goes on.
final class IsolatedTrackPCM: TrackPCM {
    private let child: ChildProcess
    private let settings: DecodeWorker.Settings
    /// Sample frames from the worker, and what it wrote on stderr (a trap's "Fatal error: ..." line).
    private var output = WorkerOutput()
    /// The first answer, read in `init` so a file that cannot be opened fails `begin`.
    private var pending: [UInt8]?
    private var ended = false
    /// The channel count asked for: every frame of samples holds whole frames of it.
    private let channels: Int

    init(path: String, hints: TrackDecoder.Hints, channels: Int, settings: DecodeWorker.Settings,
         start: DecodeStart = DecodeStart()) throws {
        self.settings = settings
        self.channels = max(1, channels)
        child = try ChildProcess.worker(executable: settings.executable, arguments: settings.arguments,
                                        overrides: settings.environment)
        let deadline = monotonicNanos() + UInt64(settings.startSeconds * 1e9)
        let hello: [UInt8]
        do {
            hello = try receive(deadline: deadline)
        } catch var error as DecodeWorkerError {
            // Before the request: not the file's doing (a loaded machine, a broken binary).
            error.quarantines = false
            throw error
        }
        guard hello == DecodeWorker.hello else {
            throw finish("\(settings.executable) is not a streamd decoder (wrong hello)", quarantines: false)
        }
        var request = DecodeWorker.request(path: path, hints: hints, channels: channels, start: start)
        while !request.isEmpty {
            let n = request.withUnsafeBytes { write(child.input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw finish("decoder worker ended before the request (\(child.wait()))", quarantines: false) }
            request.removeFirst(n)
        }
        child.closeInput()
        pending = try receive(deadline: deadline)
        if pending?.first == DecodeWorker.Kind.failure.rawValue, let payload = pending {
            throw finish(String(decoding: payload.dropFirst(), as: UTF8.self), quarantines: false)
        }
    }

    package func next(into output: inout [Float]) throws -> Int? {
        guard !ended else { return nil }
        let payload: [UInt8]
        if let first = pending {
            payload = first
            pending = nil
        } else {
            payload = try receive(deadline: monotonicNanos() + UInt64(settings.unitSeconds * 1e9))
        }
        switch payload.first.flatMap(DecodeWorker.Kind.init(rawValue:)) {
        case .samples?:
            let count = (payload.count - 5) / 4
            guard payload.count >= 5, (payload.count - 5) % 4 == 0, count <= DecodeWorker.maxSamples,
                  count % channels == 0 else {
                throw finish("decoder worker sent a malformed frame of \(payload.count) bytes")
            }
            let rate = payload[1..<5].enumerated().reduce(0) { $0 | Int($1.element) << ($1.offset * 8) }
            // What the decoders can give (the WAV parser's limit): the resampler sizes its filter by it.
            guard (1...1_536_000).contains(rate) else { throw finish("decoder worker sent a rate of \(rate) Hz") }
            output.reserveCapacity(output.count + count)
            payload.withUnsafeBytes { raw in
                for i in 0..<count { output.append(raw.loadUnaligned(fromByteOffset: 5 + i * 4, as: Float.self)) }
            }
            return rate
        case .end?:
            ended = true
            child.stop()
            return nil
        case .failure?:
            throw finish(String(decoding: payload.dropFirst(), as: UTF8.self), quarantines: false)
        case nil:
            throw finish("decoder worker sent a frame of kind \(payload.first.map(String.init) ?? "none")")
        }
    }

    /// The next frame from the worker, reading its stderr meanwhile; throws when it does not
    /// come before `deadline` or the worker ends (it is then killed and reaped).
    private func receive(deadline: UInt64) throws -> [UInt8] {
        let started = monotonicNanos()
        while true {
            do {
                if let payload = try output.frames.next() { return payload }
            } catch {
                throw finish("decoder worker sent a malformed frame (\(error))")
            }
            let now = monotonicNanos()
            guard now < deadline else {
                throw finish("decoding timed out after \(WorkerHandle.format(Double(deadline - started) / 1e9)) s")
            }
            guard !settings.isCancelled() else { throw finish("the channel stopped", quarantines: false) }
            switch output.wait(on: child, millis: Int32(min(250, (deadline - now) / 1_000_000 + 1))) {
            case .read: break
            case .ended: throw crashed(child.wait())
            case .failed(let error): throw finish("poll: \(error)")
            }
        }
    }

    /// "decoder crashed (signal 4): Fatal error: ..." from how the worker ended and what it said.
    private func crashed(_ termination: ChildProcess.Termination) -> DecodeWorkerError {
        ended = true
        return DecodeWorkerError(description: output.stderr.describeEnd(termination, of: "decoder", fd: child.errors), quarantines: true)
    }

    /// Kills and reaps the worker; the error to throw (by default, one that quarantines the file).
    private func finish(_ why: String, quarantines: Bool = true) -> DecodeWorkerError {
        ended = true
        child.kill()
        child.wait()
        return DecodeWorkerError(description: why, quarantines: quarantines)
    }
}
