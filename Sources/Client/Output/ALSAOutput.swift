internal import CALSA
import StreamShared

/// A sound card through ALSA (libasound), wrapped once. Opens `device` (default "default")
/// with the stream's rate and channels; ALSA's plug layer converts when the card differs.
public final class ALSAOutput: AudioOutput {
    public let device: String
    private var pcm: OpaquePointer?
    private var channels = 2
    private var scratch: [Int16] = []
    /// Device underruns recovered from (counted, never fatal).
    public private(set) var underruns = 0

    public init(device: String = "default") { self.device = device }
    public var isRealtime: Bool { true }

    public func open(_ format: AudioFormat) throws {
        if pcm != nil { try close() }
        var handle: OpaquePointer?
        var result = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard result >= 0, let handle else {
            throw OutputError(message: "cannot open ALSA device '\(device)': \(String(cString: snd_strerror(result)))")
        }
        result = snd_pcm_set_params(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(format.channels),
                                    UInt32(format.sampleRate), 1, 200_000)
        guard result >= 0 else {
            snd_pcm_close(handle)
            throw OutputError(message: "ALSA device '\(device)' refuses \(format): \(String(cString: snd_strerror(result)))")
        }
        pcm = handle
        channels = format.channels
    }

    /// Asks the device whether it takes `format`'s rate as it is (a plug device converts any
    /// rate, a `hw:` device often only runs at 48 kHz); if not, the nearest rate it offers.
    public func preferredSampleRate(for format: AudioFormat) -> Int? {
        var handle: OpaquePointer?
        guard snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0) >= 0, let handle else { return nil }
        defer { snd_pcm_close(handle) }
        var params: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&params) >= 0, let params else { return nil }
        defer { snd_pcm_hw_params_free(params) }
        guard snd_pcm_hw_params_any(handle, params) >= 0 else { return nil }
        if snd_pcm_hw_params_test_rate(handle, params, UInt32(format.sampleRate), 0) == 0 { return nil }
        var rate = UInt32(format.sampleRate)
        var direction: Int32 = 0
        guard snd_pcm_hw_params_set_rate_near(handle, params, &rate, &direction) >= 0, rate > 0 else { return nil }
        return Int(rate)
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let pcm else { throw OutputError(message: "ALSA output used before open") }
        scratch.removeAll(keepingCapacity: true)
        for x in samples { scratch.append(int16Sample(x)) }
        var offset = 0
        let frames = scratch.count / channels
        while offset < frames {
            let written = scratch.withUnsafeBufferPointer { buffer in
                snd_pcm_writei(pcm, buffer.baseAddress.map { $0 + offset * channels }, snd_pcm_uframes_t(frames - offset))
            }
            if written < 0 {
                if written == -Int(EPIPE) { underruns += 1 }
                let recovered = snd_pcm_recover(pcm, Int32(written), 1)
                guard recovered >= 0 else {
                    throw OutputError(message: "ALSA write: \(String(cString: snd_strerror(Int32(written))))")
                }
                continue
            }
            offset += Int(written)
        }
    }

    public func close() throws {
        guard let pcm else { return }
        snd_pcm_drain(pcm)
        snd_pcm_close(pcm)
        self.pcm = nil
    }
}
