import Glibc
import StreamShared

/// Why an output failed.
public struct OutputError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { "output: \(message)" }
}

/// Where PCM goes: a sound card, a WAV file, or nowhere.
public protocol AudioOutput: AnyObject {
    /// Paced by a device clock (ALSA) rather than as fast as possible.
    var isRealtime: Bool { get }
    func open(_ format: AudioFormat) throws
    /// Writes interleaved samples (blocking as the device needs).
    func write(_ samples: UnsafeBufferPointer<Float>) throws
    /// Finishes: drains a device, completes a file's header.
    func close() throws
    /// The rate the device would rather run at when it cannot take `format`'s own (the DSP
    /// chain then resamples to it); nil when it takes the format as it is.
    func preferredSampleRate(for format: AudioFormat) -> Int?
    /// The rate a track in `format` is resampled to when it follows a track whose output ran in
    /// `running` (nil: the format's own). An output a queue's tracks share may keep the running rate.
    func sampleRate(for format: AudioFormat, following running: AudioFormat?) -> Int?
    /// Decode side, before a track's samples are queued behind those of a track in `running`:
    /// throws when the output cannot take `format` after it (a file cannot change its channels).
    func check(_ format: AudioFormat, after running: AudioFormat) throws
    /// The device's own count of underruns it recovered from (0 without a device).
    var deviceUnderruns: Int { get }
}

extension AudioOutput {
    public func preferredSampleRate(for format: AudioFormat) -> Int? { nil }
    /// An output of one track: the device's preference.
    public func sampleRate(for format: AudioFormat, following running: AudioFormat?) -> Int? {
        preferredSampleRate(for: format)
    }
    public func check(_ format: AudioFormat, after running: AudioFormat) throws {}
    public var deviceUnderruns: Int { 0 }
}

/// Float → signed 16-bit with rounding and clipping; exact for samples that came from 16 bits.
/// Ties round to even, as libmpg123's own 16-bit output does (so its float output written here
/// is bit for bit what `mpg123 -w` writes).
///
/// Branch-free, so a loop of it vectorises: the value is clipped first, then 1.5 × 2^23 is
/// added, which leaves it, rounded to nearest-even by the FPU, in the low bits of the sum's
/// mantissa (what `rounded(.toNearestOrEven)` and a checked `Int16(_:)` did cost 6 ns a sample,
/// as much as the decoding). NaN gives 32767, as before.
@inline(__always)
func int16Sample(_ x: Float) -> Int16 {
    let clipped = max(-32768, min(32767, x * 32768))
    return Int16(truncatingIfNeeded: (clipped + 12_582_912).bitPattern)
}

/// Converts `samples` to little-endian 16-bit (`int16Sample`) into `out`, which holds as many.
@inline(__always)
func convertToInt16LE(_ samples: UnsafeBufferPointer<Float>, into out: UnsafeMutableBufferPointer<Int16>) {
    for i in 0..<min(samples.count, out.count) { out[i] = int16Sample(samples[i]).littleEndian }
}

/// Discards audio (for benchmarks and decode-only runs).
public final class NullOutput: AudioOutput {
    public private(set) var frames = 0
    private var channels = 1
    public init() {}
    public var isRealtime: Bool { false }
    public func open(_ format: AudioFormat) throws { channels = format.channels }
    public func write(_ samples: UnsafeBufferPointer<Float>) throws { frames += samples.count / channels }
    public func close() throws {}
}

/// A PCM WAV file in the source's precision: 16-bit for decoded MP3/AAC and 16-bit WAV, 24-bit
/// for 24-bit sources, 32-bit float for float sources (so WAV in gives the same samples out;
/// 32-bit integer and 64-bit float sources are written as 32-bit float, their precision as
/// a Float carries it). The header is rewritten every second and at the end, so a file cut
/// short by a crash or Ctrl-C is still valid up to its last second.
public final class WAVFileOutput: AudioOutput {
    public let path: String
    private var fd: Int32 = -1
    private var format: AudioFormat?
    private var dataBytes = 0
    private var bytesSinceHeader = 0
    private var scratch: [UInt8] = []
    /// 16-bit samples for a write, kept between writes (grown when a write brings more).
    private var pcm16 = UnsafeMutableBufferPointer<Int16>(start: nil, count: 0)
    /// Bytes per sample written, and whether they are IEEE floats.
    private var bytesPerSample = 2
    private var writesFloat = false

    public init(path: String) { self.path = path }
    public var isRealtime: Bool { false }

    public func open(_ format: AudioFormat) throws {
        if let existing = self.format {
            guard existing == format else {
                throw OutputError(message: "WAV output cannot change format mid-file (\(existing) → \(format))")
            }
            return
        }
        let opened = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard opened >= 0 else {
            throw OutputError(message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        fd = opened
        self.format = format
        switch format.sampleType {
        case .int16: (bytesPerSample, writesFloat) = (2, false)
        case .int24: (bytesPerSample, writesFloat) = (3, false)
        case .int32, .float32, .float64: (bytesPerSample, writesFloat) = (4, true)
        }
        try writeAll(header(dataBytes: 0), at: nil)
    }

    private func header(dataBytes: Int) -> [UInt8] {
        guard let format else { return [] }
        func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        let blockAlign = format.channels * bytesPerSample
        let tag = writesFloat ? 3 : 1
        let common = le16(format.channels) + le32(format.sampleRate) + le32(format.sampleRate * blockAlign)
            + le16(blockAlign) + le16(bytesPerSample * 8)
        if let mask = format.channelMask, mask != 0 {
            // WAVE_FORMAT_EXTENSIBLE: the speakers named; the sub-format GUID is the tag's
            // (KSDATAFORMAT_SUBTYPE_PCM or _IEEE_FLOAT).
            let guid: [UInt8] = le16(tag) + [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
            return Array("RIFF".utf8) + le32(60 + dataBytes) + Array("WAVE".utf8) + Array("fmt ".utf8) + le32(40)
                + le16(0xFFFE) + common + le16(22) + le16(bytesPerSample * 8) + le32(Int(mask)) + guid
                + Array("data".utf8) + le32(dataBytes)
        }
        return Array("RIFF".utf8) + le32(36 + dataBytes) + Array("WAVE".utf8) + Array("fmt ".utf8) + le32(16)
            + le16(tag) + common + Array("data".utf8) + le32(dataBytes)
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard fd >= 0, let format else { throw OutputError(message: "WAV output used before open") }
        if bytesPerSample == 2 {
            // Decoded MP3/AAC and 16-bit WAV: converted in one vectorised pass, written as it lies.
            if pcm16.count < samples.count {
                pcm16.deallocate()
                pcm16 = .allocate(capacity: samples.count)
            }
            let out = UnsafeMutableBufferPointer(rebasing: pcm16[..<samples.count])
            convertToInt16LE(samples, into: out)
            try writeAll(UnsafeRawBufferPointer(out), at: nil)
            try account(bytes: out.count * 2, format: format)
            return
        }
        scratch.removeAll(keepingCapacity: true)
        scratch.reserveCapacity(samples.count * bytesPerSample)
        switch (bytesPerSample, writesFloat) {
        case (4, true):
            for x in samples {
                let v = x.bitPattern
                scratch.append(UInt8(v & 0xFF))
                scratch.append(UInt8(v >> 8 & 0xFF))
                scratch.append(UInt8(v >> 16 & 0xFF))
                scratch.append(UInt8(v >> 24))
            }
        case (3, _):
            for x in samples {
                // Exact for 24-bit sources: a Float holds 24 significant bits.
                let v = UInt32(bitPattern: Int32(max(-8_388_608, min(8_388_607, (x * 8_388_608).rounded()))))
                scratch.append(UInt8(v & 0xFF))
                scratch.append(UInt8(v >> 8 & 0xFF))
                scratch.append(UInt8(v >> 16 & 0xFF))
            }
        default:
            for x in samples {
                let v = UInt16(bitPattern: int16Sample(x))
                scratch.append(UInt8(v & 0xFF))
                scratch.append(UInt8(v >> 8))
            }
        }
        try writeAll(scratch, at: nil)
        try account(bytes: scratch.count, format: format)
    }

    /// Counts written audio bytes; the header is rewritten once a second of audio has gone out.
    private func account(bytes: Int, format: AudioFormat) throws {
        dataBytes += bytes
        bytesSinceHeader += bytes
        if bytesSinceHeader >= format.sampleRate * format.channels * bytesPerSample {
            try rewriteHeader()
        }
    }

    private func rewriteHeader() throws {
        guard fd >= 0 else { return }
        bytesSinceHeader = 0
        try writeAll(header(dataBytes: dataBytes), at: 0)
    }

    /// Writes every byte, at the file's position (`offset` nil) or at `offset` (pwrite, which
    /// leaves the position where it is); retries short writes and EINTR.
    private func writeAll(_ bytes: [UInt8], at offset: Int?) throws {
        try bytes.withUnsafeBytes { raw in try writeAll(raw, at: offset) }
    }

    private func writeAll(_ raw: UnsafeRawBufferPointer, at offset: Int?) throws {
        guard let base = raw.baseAddress else { return }
        var done = 0
        while done < raw.count {
            let n = offset.map { pwrite(fd, base + done, raw.count - done, off_t($0 + done)) }
                ?? Glibc.write(fd, base + done, raw.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw OutputError(message: "write \(path): \(String(cString: strerror(errno)))")
            }
            done += n
        }
    }

    public func close() throws {
        guard fd >= 0 else { return }
        defer { fd = -1 }
        try rewriteHeader()
        guard Glibc.close(fd) == 0 else { throw OutputError(message: "close \(path): \(String(cString: strerror(errno)))") }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
        pcm16.deallocate()
    }
}
