import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamRadio

/// Why a track's waveform could not be made.
struct WaveformBuildError: Error, CustomStringConvertible {
    var description: String
}

/// One track's waveform read from a `streamd decode-worker` process: the worker is started,
/// sent a waveform request, and its pairs are handed to `received` as they come; it is killed
/// and reaped at the end whatever happens. A worker that crashes, says nothing for
/// `unitSeconds` (`startSeconds` for its hello and first answer), or writes a malformed message
/// is a thrown `WaveformBuildError` naming how it ended, as is the decoder's own refusal.
struct WaveformWorkerRun {
    let settings: DecodeWorker.Settings
    private var output = WorkerOutput()

    init(settings: DecodeWorker.Settings) {
        self.settings = settings
    }

    /// Decodes the track at `path`; returns its rate, its length in frames and its last pair
    /// when that one spans fewer frames than the others (empty otherwise).
    mutating func run(path: String, hints: TrackDecoder.Hints,
                      received: (_ rate: Int, _ pairs: [Int16]) throws(WaveformBuildError) -> Void)
        throws(WaveformBuildError) -> (rate: Int, frames: Int, last: [Int16]) {
        let child: ChildProcess
        do {
            child = try ChildProcess.worker(executable: settings.executable, arguments: settings.arguments,
                                            overrides: settings.environment)
        } catch {
            throw WaveformBuildError(description: "cannot start the decoder: \(error)")
        }
        defer {
            child.kill()
            child.wait()
        }
        var deadline = monotonicNanos() + UInt64(settings.startSeconds * 1e9)
        guard try receive(child, deadline: deadline) == DecodeWorker.hello else {
            throw WaveformBuildError(description: "\(settings.executable) is not a streamd decoder (wrong hello)")
        }
        var request = DecodeWorker.waveformRequest(path: path, hints: hints)
        while !request.isEmpty {
            let n = request.withUnsafeBytes { write(child.input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw WaveformBuildError(description: "decoder ended before the request") }
            request.removeFirst(n)
        }
        child.closeInput()
        var pairsSeen = 0
        var trackRate: Int?
        while true {
            let payload = try receive(child, deadline: deadline)
            deadline = monotonicNanos() + UInt64(settings.unitSeconds * 1e9)
            let message: WaveformWire.Message
            do {
                message = try WaveformWire.parse(payload)
            } catch {
                throw WaveformBuildError(description: "decoder sent a malformed message (\(error))")
            }
            switch message {
            case .pairs(let rate, let pairs):
                guard trackRate == nil || trackRate == rate else {
                    throw WaveformBuildError(description: "decoder changed the rate from \(trackRate ?? 0) to \(rate) Hz")
                }
                trackRate = rate
                pairsSeen += pairs.count / 2
                try received(rate, pairs)
            case .end(let rate, let frames, let last):
                // The pairs before the end span whole `pairFrames`: their count must match the length.
                guard pairsSeen == frames / WaveformReducer.pairFrames, trackRate == nil || trackRate == rate else {
                    throw WaveformBuildError(description: "decoder's end (\(frames) frames at \(rate) Hz) does not match its \(pairsSeen) pairs")
                }
                return (rate, frames, last)
            case .failure(let text):
                throw WaveformBuildError(description: text)
            }
        }
    }

    /// The next frame from the worker, reading its stderr meanwhile; throws when it does not
    /// come before `deadline`, the worker ends, or the server stops.
    private mutating func receive(_ child: ChildProcess, deadline: UInt64) throws(WaveformBuildError) -> [UInt8] {
        let started = monotonicNanos()
        while true {
            do {
                if let payload = try output.frames.next() { return payload }
            } catch {
                throw WaveformBuildError(description: "decoder sent a malformed frame (\(error))")
            }
            let now = monotonicNanos()
            guard now < deadline else {
                throw WaveformBuildError(description: "decoding timed out after \(String(format: "%.1f", Double(now - started) / 1e9)) s")
            }
            guard !settings.isCancelled() else { throw WaveformBuildError(description: "streamd is stopping") }
            switch output.wait(on: child, millis: Int32(min(250, (deadline - now) / 1_000_000 + 1))) {
            case .read: break
            case .ended:
                throw WaveformBuildError(description: output.stderr.describeEnd(child.wait(), of: "decoder", fd: child.errors))
            case .failed(let error): throw WaveformBuildError(description: "poll: \(error)")
            }
        }
    }
}
