#if canImport(Glibc)
import Glibc
#endif
import StreamAudio
import StreamShared
import StreamHTTP
import StreamLibrary

/// The decode worker's second job: a track's waveform. The request's first byte, which is
/// the channel count (1 or 2) for a radio channel's samples, is 0; the rest is laid out the
/// same (the analysis' hints, the path). The worker decodes the track with `TrackDecoder`
/// (every channel as the file has them, the gapless trim applied), reduces each unit to min/max
/// pairs of `WaveformReducer.pairFrames` frames, and sends them as they come (`WaveformWire`:
/// the first unit's pairs at once, then about every 6 seconds of audio, then the end with the
/// length in frames, or the decoder's error), so streamd's pyramid grows while the track is read. Only 4 bytes per 256
/// frames cross the pipe, so the waveform costs the decode and little more.
extension DecodeWorker {
    /// The first byte of a waveform request.
    package static let waveformRequestTag: UInt8 = 0
    /// Pairs the worker gathers before it sends them (about 6 s of audio at 44.1 kHz).
    static let waveformPairsPerMessage = 1024

    /// The request for the waveform of the track at `path`.
    package static func waveformRequest(path: String, hints: TrackDecoder.Hints) -> [UInt8] {
        var payload: [UInt8] = [waveformRequestTag]
        for value in [hints.audioStart, hints.audioEnd, hints.encoderDelay, hints.encoderPadding, hints.totalSamples] {
            let bits = UInt64(bitPattern: Int64(value))
            for shift in stride(from: 0, to: 64, by: 8) { payload.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
        return AnalyzerProtocol.frame(payload + Array(path.utf8))
    }

    package static func parseWaveformRequest(_ payload: [UInt8]) throws(FormatError) -> (path: String, hints: TrackDecoder.Hints) {
        var reader = ByteReader(payload, component: "waveform request")
        guard try reader.readU8() == waveformRequestTag else {
            throw .invalid(component: "waveform request", reason: "not a waveform request", offset: 0)
        }
        var values: [Int] = []
        for _ in 0..<5 { values.append(Int(Int64(bitPattern: try reader.readU64LE()))) }
        let hints = TrackDecoder.Hints(audioStart: values[0], audioEnd: values[1], encoderDelay: values[2],
                                       encoderPadding: values[3], totalSamples: values[4])
        return (String(decoding: reader.rest, as: UTF8.self), hints)
    }

    /// Answers a waveform request (the worker's hello is already sent); returns the exit status.
    static func runWaveform(_ payload: [UInt8], faultSpec: String) -> Int32 {
        guard let request = try? parseWaveformRequest(payload) else { return 2 }
        let (path, hints) = request
        let fault = Fault(faultSpec, path: path)
        let pause = slowFault(faultSpec, path: path)
        var samples: [Float] = []
        var pairs: [Int16] = []
        pairs.reserveCapacity(2 * waveformPairsPerMessage + 64)
        var reducer = WaveformReducer()
        var rate: Int?
        do {
            var decoder = try TrackDecoder(source: try OpenFile(path: path), hints: hints)
            var units = 0
            while true {
                samples.removeAll(keepingCapacity: true)
                // A second line of defence: a decoder that loops ends even if the server is gone.
                alarm(60)
                let more = try decoder.decode(into: &samples)
                alarm(0)
                guard more else { break }
                if units == 1 { fault.inject() }
                units += 1
                let format = decoder.format
                // One rate for the track: a chained Ogg stream that changes it keeps its first.
                if rate == nil { rate = format.sampleRate }
                samples.withUnsafeBufferPointer { reducer.add($0, channels: format.channels, into: &pairs) }
                // The first unit's pairs go at once, so an answer has something to show early.
                if pairs.count >= 2 * waveformPairsPerMessage || (units == 1 && !pairs.isEmpty) {
                    guard send(.pairs(rate: rate ?? format.sampleRate, pairs)) else { return 1 }
                    pairs.removeAll(keepingCapacity: true)
                    if pause > 0 { usleep(pause) }
                }
            }
            let trackRate = rate ?? decoder.format.sampleRate
            // A last pair of fewer frames goes with the end (see `WaveformWire.Message.end`).
            let partial = reducer.frames % WaveformReducer.pairFrames != 0
            reducer.finish(into: &pairs)
            let last = partial ? Array(pairs.suffix(2)) : []
            if partial { pairs.removeLast(2) }
            if !pairs.isEmpty { guard send(.pairs(rate: trackRate, pairs)) else { return 1 } }
            return send(.end(rate: trackRate, frames: reducer.frames, last: last)) ? 0 : 1
        } catch {
            return send(.failure("\(error)")) ? 0 : 1
        }
    }

    /// The waveform's own fault drill, `slow:NAME`: 50 ms after each message of pairs for
    /// files of that name, so a test sees a waveform grow however fast the machine decodes.
    static func slowFault(_ spec: String, path: String) -> UInt32 {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return spec.split(separator: ",").contains { $0 == "slow:" + name } ? 50_000 : 0
    }

    private static func send(_ message: WaveformWire.Message) -> Bool {
        WorkerSide.writeAll(AnalyzerProtocol.frame(WaveformWire.encode(message)))
    }
}
