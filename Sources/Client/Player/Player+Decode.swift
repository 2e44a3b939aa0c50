import Foundation
import StreamShared

extension Player {
    /// What the probe and the first frame tell about an MP3 stream.
    struct MP3Facts {
        var stream: ProbedStream
        var header: MPEGFrameHeader
        /// Offset of the first audio frame (after tags and the Xing/Info frame).
        var audioStart: Int
        /// Samples to drop at the start: encoder delay + the decoder's 529 (0 without a LAME tag).
        var trimStart: Int
        /// Playable samples after trimming, when the frame count is known.
        var trimmedLength: Int?
        var totalFrames: Int?
    }

    /// The decode thread's work: probe, seek if asked, then parse → decode → trim → DSP → ring.
    func decode(into ring: SPSCRing, outputLoop: OutputLoop, started: DispatchTime) throws {
        let facts = try probeStream()
        let sampleRate = facts.header.sampleRate
        let spf = facts.header.samplesPerFrame
        let channels = facts.header.channels
        let format = AudioFormat(sampleRate: sampleRate, channels: channels)
        continuation.yield(.format(format, codec: facts.stream.codec))
        continuation.yield(.metadata(facts.stream.tags))
        commands.withLock {
            statsStorage.codec = facts.stream.codec
            statsStorage.container = facts.stream.container.rawValue
            statsStorage.sampleRate = sampleRate
            statsStorage.channels = channels
            duration = facts.trimmedLength.map { Double($0) / Double(sampleRate) } ?? estimatedDuration(facts)
            statsStorage.durationSeconds = duration
        }
        let decoder = try MPG123Decoder()
        var reader = MP3FrameReader()
        var gain = Gain(volume: options.volume)
        gain.sampleRate = sampleRate
        // Untrimmed sample index of the next decoded sample, and the window to keep.
        var decodedPosition = 0
        var keepFrom = facts.trimStart
        var keepUntil = facts.trimmedLength.map { facts.trimStart + $0 } ?? Int.max
        let blockSamples = format.framesPerBuffer * channels
        var pending: [Float] = []
        pending.reserveCapacity(blockSamples)
        /// Blocks completed inside the decoder callback, emitted right after it returns.
        var fullBlocks: [[Float]] = []
        var outputStarted = false
        var streamEnded = false

        /// Moves the read position to `seconds`: throttle reset, a new request from the
        /// nearest indexed frame a few frames early (bit reservoir), samples dropped to the exact spot.
        func seekTo(_ seconds: Double) throws {
            let target = facts.trimStart + Int((seconds * Double(sampleRate)).rounded())
            let targetFrame = target / spf
            let (frameIndex, byte) = try locateFrame(atOrBefore: max(0, targetFrame - 4), facts: facts)
            throttle.reset(to: byte)
            control.seek(to: byte)
            reader.restart(at: byte)
            try decoder.reopen()
            decodedPosition = frameIndex * spf
            keepFrom = max(facts.trimStart, target)
            if outputStarted {
                outputLoop.flush(resumingAt: keepFrom - facts.trimStart)
            } else {
                outputLoop.setStart(frame: keepFrom - facts.trimStart)
            }
            if let limit = options.duration {
                keepUntil = min(facts.trimmedLength.map { facts.trimStart + $0 } ?? Int.max,
                                keepFrom + Int((limit * Double(sampleRate)).rounded()))
            }
            streamEnded = false
            log("parser", "seek to \(seconds) s: frame \(frameIndex) at byte \(byte)")
        }

        if options.start > 0 {
            commands.withLock { seekStartedMs = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e6 }
            try seekTo(options.start)
        } else {
            // Keep reading from where the probe stopped; feed the parser from the first audio frame.
            reader.restart(at: facts.audioStart)
            if let limit = options.duration {
                keepUntil = min(keepUntil, facts.trimStart + Int((limit * Double(sampleRate)).rounded()))
            }
            reader.append(Array(probePrefix.dropFirst(facts.audioStart)))
        }
        probePrefix = []

        func emit(_ buffer: inout [Float]) throws {
            guard !buffer.isEmpty else { return }
            if !outputStarted {
                log("converter", "first PCM buffer: \(buffer.count / channels) frames")
                try outputLoop.start(format: format)
                outputStarted = true
                setState(.playing)
            }
            if let volume = commands.withLock({ () -> Float? in defer { pendingVolume = nil }; return pendingVolume }) {
                gain.set(volume)
            }
            gain.process(&buffer, channels: channels)
            var offset = 0
            while offset < buffer.count {
                let written = buffer[offset...].withUnsafeBufferPointer { ring.write($0) }
                offset += written
                if written == 0 {
                    if commands.withLock({ stopRequested || pendingSeek != nil }) { break }
                    ring.waitForSpace(timeout: 0.01)
                }
            }
            buffer.removeAll(keepingCapacity: true)
        }

        while true {
            if commands.withLock({ stopRequested }) {
                outputLoop.abort()
                break
            }
            let heard = Double(outputLoop.playedPosition) / Double(sampleRate)
            commands.withLock { position = heard }
            continuation.yield(.progress(position: heard, duration: commands.withLock { duration }))
            if let seconds = commands.withLock({ () -> Double? in defer { pendingSeek = nil }; return pendingSeek }) {
                setState(.seeking)
                pending.removeAll(keepingCapacity: true)
                try seekTo(seconds)
                setState(.playing)
            }
            // Parse and decode every whole frame buffered.
            while let frame = try reader.next(isComplete: streamEnded) {
                try decoder.decode(frame: frame.bytes) { samples, _ in
                    let frames = samples.count / channels
                    let start = decodedPosition
                    decodedPosition += frames
                    let lower = max(keepFrom, start), upper = min(keepUntil, decodedPosition)
                    guard lower < upper else { return }
                    var from = (lower - start) * channels
                    let to = (upper - start) * channels
                    let scale: Float = 1.0 / 32768
                    // Convert straight into the fixed-size block; a full block goes down the chain.
                    while from < to {
                        let take = min(to - from, blockSamples - pending.count)
                        let old = pending.count
                        pending.append(contentsOf: repeatElement(0, count: take))
                        pending.withUnsafeMutableBufferPointer { out in
                            for i in 0..<take { out[old + i] = Float(samples[from + i]) * scale }
                        }
                        from += take
                        if pending.count == blockSamples { fullBlocks.append(pending); pending.removeAll(keepingCapacity: true) }
                    }
                }
                for var block in fullBlocks { try emit(&block) }
                fullBlocks.removeAll(keepingCapacity: true)
                let heard = Double(outputLoop.playedPosition) / Double(sampleRate)
                commands.withLock { position = heard }
                if decodedPosition >= keepUntil { break }
            }
            if decodedPosition >= keepUntil || streamEnded { break }
            switch throttle.read(max: 64 * 1024, timeout: 0.05) {
            case .bytes(let bytes, _):
                reader.append(bytes)
                continuation.yield(.buffer(fill: throttle.fill, capacity: throttle.capacity))
            case .end:
                streamEnded = true
            case .failed(let error):
                throw PlaybackError(message: "\(error)", exitCode: (error as? SourceError)?.exitCode ?? 3)
            case .timedOut:
                continue
            }
        }
        try emit(&pending)
        // A stream that ends before the samples its Xing header promised is truncated (or the header lies).
        if let expected = facts.totalFrames, streamEnded, keepUntil != Int.max, decodedPosition < keepUntil,
           !commands.withLock({ stopRequested }) {
            throw PlaybackError(message: "parser: stream ended after \(decodedPosition / spf) of \(expected) frames (truncated file or wrong Xing header)",
                                exitCode: 1)
        }
    }

    /// Duration from CBR arithmetic when no header says it.
    func estimatedDuration(_ facts: MP3Facts) -> Double? {
        guard let size = control.totalSize, facts.header.bitrate > 0 else { return nil }
        return Double(size - facts.audioStart) * 8 / Double(facts.header.bitrate)
    }

    /// Reads from the throttle until Probe can tell what the stream is.
    func probeStream() throws -> MP3Facts {
        var ended = false
        while true {
            if commands.withLock({ stopRequested }) { throw PlaybackError(message: "player: stopped", exitCode: 0) }
            if !probePrefix.isEmpty || ended {
                let outcome: Probe.Result
                do {
                    outcome = try Probe.probe(probePrefix[...], isComplete: ended)
                } catch let error as FormatError {
                    throw PlaybackError(message: error.isTruncation ? "parser: truncated stream (\(error))" : "\(error)",
                                        exitCode: 1)
                }
                switch outcome {
                case .audio(let stream):
                    guard stream.container == .mp3, let first = stream.mpegFrame else {
                        throw PlaybackError(message: "converter: unsupported format: \(stream.container.rawValue)/\(stream.codec) (MP3 only so far)",
                                            exitCode: 1)
                    }
                    let gapless = stream.vbrHeader?.gapless
                    let trimStart = gapless.map { $0.encoderDelay + 529 } ?? 0
                    let totalFrames = stream.vbrHeader?.frameCount
                    let spf = first.header.samplesPerFrame
                    let trimmed = totalFrames.map { frames in
                        max(0, frames * spf - (gapless?.encoderDelay ?? 0) - (gapless?.encoderPadding ?? 0))
                    }
                    log("parser", "\(stream.codec) \(first.header.sampleRate) Hz, first frame at \(first.offset)"
                        + (totalFrames.map { ", \($0) frames" } ?? ""))
                    return MP3Facts(stream: stream, header: first.header,
                                    audioStart: first.offset + (stream.vbrHeader != nil ? first.length : 0),
                                    trimStart: trimStart, trimmedLength: trimmed, totalFrames: totalFrames)
                case .needMore(let atLeast):
                    if ended {
                        throw PlaybackError(message: "parser: truncated stream (\(probePrefix.count) bytes)", exitCode: 1)
                    }
                    if atLeast > 64 * 1024 * 1024 {
                        throw PlaybackError(message: "parser: needs \(atLeast) bytes before the audio", exitCode: 1)
                    }
                    if probePrefix.count >= atLeast { break }
                }
            }
            switch throttle.read(max: 64 * 1024, timeout: 0.05) {
            case .bytes(let bytes, _): probePrefix += bytes
            case .end:
                if probePrefix.isEmpty { throw PlaybackError(message: "parser: not an audio stream (empty)", exitCode: 1) }
                ended = true
            case .failed(let error):
                throw PlaybackError(message: "\(error)", exitCode: (error as? SourceError)?.exitCode ?? 3)
            case .timedOut: continue
            }
        }
    }
}
