internal import CRubberBand
import StreamClient
import StreamAudio

/// librubberband (GPL-2+) through its C API as a `TimeStretcher`, wrapped once, here: a peer
/// for the bench only. streamplay does not link it, so it stays distributable.
public final class RubberBandStretcher: TimeStretcher {
    private let state: OpaquePointer
    private let channels: Int
    /// Planar scratch planes owned by this wrapper (rubberband takes and gives planar audio).
    private var inPlanes: [UnsafeMutablePointer<Float>?]
    private var outPlanes: [UnsafeMutablePointer<Float>?]
    private var capacity = 16_384

    /// `finer` picks the R3 engine (higher quality, more CPU); the default is R2 ("faster").
    /// The speed is given up front: R2 in real-time mode sizes its windows from the first
    /// ratio, and a later change makes it reallocate (and warn) on the audio path.
    public init(sampleRate: Int, channels: Int, finer: Bool = false, speed: Double = 1) throws {
        // R2 with its default crisp transients garbles a steady tone in real-time mode (THD+N
        // -5 dB, pitch off by 21 cents on 433 Hz at 1.5x, librubberband 3.1.2; a plain C
        // program gives the same), so it runs with smooth transients (THD+N -55 dB there).
        let transients = finer ? RubberBandOptionTransientsCrisp : RubberBandOptionTransientsSmooth
        let options = Int32(bitPattern: UInt32(RubberBandOptionProcessRealTime.rawValue)
            | UInt32(RubberBandOptionThreadingNever.rawValue) | UInt32(transients.rawValue)
            | UInt32((finer ? RubberBandOptionEngineFiner : RubberBandOptionEngineFaster).rawValue))
        guard let created = rubberband_new(UInt32(sampleRate), UInt32(channels), options, 1 / speed, 1) else {
            throw DSPError("librubberband: cannot create a stretcher")
        }
        state = created
        self.speed = speed
        self.channels = max(1, channels)
        inPlanes = (0..<max(1, channels)).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: 16_384) }
        outPlanes = (0..<max(1, channels)).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: 16_384) }
    }

    deinit {
        rubberband_delete(state)
        for p in inPlanes + outPlanes { p?.deallocate() }
    }

    public var speed: Double = 1 {
        didSet { rubberband_set_time_ratio(state, 1 / speed) }
    }

    public var latencyFrames: Int { Int(rubberband_get_latency(state)) }

    public func process(_ input: UnsafeBufferPointer<Float>, into output: inout [Float]) {
        feed(input, final: false, into: &output)
    }

    public func flush(into output: inout [Float]) {
        feed(UnsafeBufferPointer(start: nil, count: 0), final: true, into: &output)
    }

    public func reset() { rubberband_reset(state) }

    private func feed(_ input: UnsafeBufferPointer<Float>, final: Bool, into output: inout [Float]) {
        let frames = input.count / channels
        var offset = 0
        repeat {
            // Blocks of up to 1024 frames (more when rubberband asks for more), as its own
            // real-time examples do.
            let n = min(max(1024, Int(rubberband_get_samples_required(state))), frames - offset, capacity)
            for c in 0..<channels {
                guard let plane = inPlanes[c] else { continue }
                for f in 0..<n { plane[f] = input[(offset + f) * channels + c] }
            }
            let isLast = final && offset + n >= frames
            inPlanes.withUnsafeBufferPointer { planes in
                planes.baseAddress?.withMemoryRebound(to: UnsafePointer<Float>?.self, capacity: channels) {
                    rubberband_process(state, $0, UInt32(n), isLast ? 1 : 0)
                }
            }
            offset += n
            retrieve(into: &output)
        } while offset < frames
    }

    private func retrieve(into output: inout [Float]) {
        for _ in 0..<100_000 {
            let available = min(Int(rubberband_available(state)), capacity)
            guard available > 0 else { return }
            let got = outPlanes.withUnsafeBufferPointer { planes in
                planes.baseAddress.map { Int(rubberband_retrieve(state, $0, UInt32(available))) } ?? 0
            }
            guard got > 0 else { return }
            for f in 0..<got { for c in 0..<channels { output.append(outPlanes[c]?[f] ?? 0) } }
        }
    }
}
