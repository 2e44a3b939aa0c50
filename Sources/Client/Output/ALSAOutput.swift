#if canImport(Glibc)
import Glibc
#endif
internal import CALSA
import StreamShared

/// A sound card through ALSA (libasound), wrapped once. Opens `device` (default "default")
/// with the stream's rate and channels; ALSA's plug layer converts when the card differs.
/// libasound is loaded with dlopen when the first ALSA output opens, so other outputs (and
/// `--help`) never map it.
public final class ALSAOutput: AudioOutput {
    public let device: String
    private var pcm: OpaquePointer?
    private var alsa: ALSALibrary?
    private var channels = 2
    private var scratch: [Int16] = []
    /// Device underruns recovered from (counted, never fatal).
    public private(set) var underruns = 0
    public var deviceUnderruns: Int { underruns }

    public init(device: String = "default") { self.device = device }
    public var isRealtime: Bool { true }

    public func open(_ format: AudioFormat) throws {
        if pcm != nil { try close() }
        let alsa = try ALSALibrary.shared()
        self.alsa = alsa
        var handle: OpaquePointer?
        var result = alsa.pcmOpen(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard result >= 0, let handle else {
            throw OutputError(message: "cannot open ALSA device '\(device)': \(alsa.text(result))")
        }
        result = alsa.pcmSetParams(handle, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, UInt32(format.channels),
                                   UInt32(format.sampleRate), 1, 200_000)
        guard result >= 0 else {
            _ = alsa.pcmClose(handle)
            throw OutputError(message: "ALSA device '\(device)' refuses \(format): \(alsa.text(result))")
        }
        pcm = handle
        channels = format.channels
    }

    /// Asks the device whether it takes `format`'s rate as it is (a plug device converts any
    /// rate, a `hw:` device often only runs at 48 kHz); if not, the nearest rate it offers.
    public func preferredSampleRate(for format: AudioFormat) -> Int? {
        guard let alsa = try? ALSALibrary.shared() else { return nil }
        var handle: OpaquePointer?
        guard alsa.pcmOpen(&handle, device, SND_PCM_STREAM_PLAYBACK, 0) >= 0, let handle else { return nil }
        defer { _ = alsa.pcmClose(handle) }
        var params: OpaquePointer?
        guard alsa.hwParamsMalloc(&params) >= 0, let params else { return nil }
        defer { alsa.hwParamsFree(params) }
        guard alsa.hwParamsAny(handle, params) >= 0 else { return nil }
        if alsa.hwParamsTestRate(handle, params, UInt32(format.sampleRate), 0) == 0 { return nil }
        var rate = UInt32(format.sampleRate)
        var direction: Int32 = 0
        guard alsa.hwParamsSetRateNear(handle, params, &rate, &direction) >= 0, rate > 0 else { return nil }
        return Int(rate)
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let pcm, let alsa else { throw OutputError(message: "ALSA output used before open") }
        // S16_LE, converted in one vectorised pass into a buffer kept between writes.
        if scratch.count < samples.count { scratch = [Int16](repeating: 0, count: samples.count) }
        scratch.withUnsafeMutableBufferPointer { convertToInt16LE(samples, into: $0) }
        var offset = 0
        let frames = samples.count / channels
        while offset < frames {
            let written = scratch.withUnsafeBufferPointer { buffer in
                alsa.pcmWritei(pcm, buffer.baseAddress.map { $0 + offset * channels }, snd_pcm_uframes_t(frames - offset))
            }
            if written < 0 {
                if written == -Int(EPIPE) { underruns += 1 }
                let recovered = alsa.pcmRecover(pcm, Int32(written), 1)
                guard recovered >= 0 else {
                    throw OutputError(message: "ALSA write: \(alsa.text(Int32(written)))")
                }
                continue
            }
            offset += Int(written)
        }
    }

    public func close() throws {
        guard let pcm, let alsa else { return }
        _ = alsa.pcmDrain(pcm)
        _ = alsa.pcmClose(pcm)
        self.pcm = nil
    }
}

/// libasound's functions that `ALSAOutput` calls, looked up with dlsym once per process.
private final class ALSALibrary: @unchecked Sendable {
    // @unchecked: every field is set once in init; C function pointers carry no state.
    let pcmOpen: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, UnsafePointer<CChar>?, snd_pcm_stream_t, Int32) -> Int32
    let pcmSetParams: @convention(c) (OpaquePointer?, snd_pcm_format_t, snd_pcm_access_t, UInt32, UInt32, Int32, UInt32) -> Int32
    let pcmClose: @convention(c) (OpaquePointer?) -> Int32
    let pcmDrain: @convention(c) (OpaquePointer?) -> Int32
    let pcmWritei: @convention(c) (OpaquePointer?, UnsafeRawPointer?, snd_pcm_uframes_t) -> snd_pcm_sframes_t
    let pcmRecover: @convention(c) (OpaquePointer?, Int32, Int32) -> Int32
    let hwParamsMalloc: @convention(c) (UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let hwParamsFree: @convention(c) (OpaquePointer?) -> Void
    let hwParamsAny: @convention(c) (OpaquePointer?, OpaquePointer?) -> Int32
    let hwParamsTestRate: @convention(c) (OpaquePointer?, OpaquePointer?, UInt32, Int32) -> Int32
    let hwParamsSetRateNear: @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeMutablePointer<UInt32>?,
                                             UnsafeMutablePointer<Int32>?) -> Int32
    private let strerror: @convention(c) (Int32) -> UnsafePointer<CChar>?

    /// The library, loaded on first use (once per process; a failure is kept and given again).
    static func shared() throws(OutputError) -> ALSALibrary { try loaded.get() }

    private static let loaded: Result<ALSALibrary, OutputError> = Result { () throws(OutputError) in try ALSALibrary() }

    private init() throws(OutputError) {
        guard let handle = dlopen("libasound.so.2", RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "libasound.so.2"
            throw OutputError(message: "ALSA output needs libasound, which could not be loaded (\(why))")
        }
        func symbol<T>(_ name: String) throws(OutputError) -> T {
            guard let address = dlsym(handle, name) else { throw OutputError(message: "libasound lacks \(name)") }
            return unsafeBitCast(address, to: T.self)
        }
        pcmOpen = try symbol("snd_pcm_open")
        pcmSetParams = try symbol("snd_pcm_set_params")
        pcmClose = try symbol("snd_pcm_close")
        pcmDrain = try symbol("snd_pcm_drain")
        pcmWritei = try symbol("snd_pcm_writei")
        pcmRecover = try symbol("snd_pcm_recover")
        hwParamsMalloc = try symbol("snd_pcm_hw_params_malloc")
        hwParamsFree = try symbol("snd_pcm_hw_params_free")
        hwParamsAny = try symbol("snd_pcm_hw_params_any")
        hwParamsTestRate = try symbol("snd_pcm_hw_params_test_rate")
        hwParamsSetRateNear = try symbol("snd_pcm_hw_params_set_rate_near")
        strerror = try symbol("snd_strerror")
    }

    /// libasound's text for an error code.
    func text(_ code: Int32) -> String { strerror(code).map { String(cString: $0) } ?? "ALSA error \(code)" }
}
