// dspbench: the program bench/dsp.sh drives. It renders a WAV file through one time-stretch
// engine (the engine alone), or through the player's whole DSP chain, and prints one JSON line with the CPU time
// the processing took (this thread only, input already in memory) per second of audio.
//
//   dspbench stretch ENGINE RATE IN.wav OUT.wav     ENGINE: wsola, sonic, rubberband, rubberband-r3
//   dspbench chain RATE EQ OUTPUT_RATE IN.wav OUT.wav
import DSPPeers
import Foundation
import StreamClient
import StreamShared

struct BenchError: Error, CustomStringConvertible {
    var description: String
}

/// Interleaved float samples of a 16-bit or 32-bit float WAV file.
func readWAV(_ path: String) throws -> (AudioFormat, [Float]) {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    guard let info = try WAV.parse(prefix: bytes[...]) else { throw BenchError(description: "\(path): truncated WAV") }
    let f = info.format
    let end = min(bytes.count, info.dataOffset + (info.dataSize ?? bytes.count))
    let data = bytes[info.dataOffset..<end]
    var samples: [Float] = []
    samples.reserveCapacity(data.count / 2)
    var i = data.startIndex
    switch (f.kind, f.bitsPerSample) {
    case (.float, 32):
        while i + 4 <= data.endIndex {
            samples.append(Float(bitPattern: UInt32(data[i]) | UInt32(data[i + 1]) << 8 | UInt32(data[i + 2]) << 16 | UInt32(data[i + 3]) << 24))
            i += 4
        }
    case (.integer, 16):
        while i + 2 <= data.endIndex {
            samples.append(Float(Int16(bitPattern: UInt16(data[i]) | UInt16(data[i + 1]) << 8)) / 32768)
            i += 2
        }
    default:
        throw BenchError(description: "\(path): only 16-bit integer and 32-bit float WAV")
    }
    return (AudioFormat(sampleRate: f.sampleRate, channels: f.channels, sampleType: .float32), samples)
}

/// A 32-bit float WAV file.
func writeWAV(_ path: String, _ samples: [Float], rate: Int, channels: Int) throws {
    var out: [UInt8] = []
    out.reserveCapacity(44 + samples.count * 4)
    func le32(_ v: Int) { out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
    func le16(_ v: Int) { out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    out += Array("RIFF".utf8); le32(36 + samples.count * 4); out += Array("WAVEfmt ".utf8)
    le32(16); le16(3); le16(channels); le32(rate); le32(rate * channels * 4); le16(channels * 4); le16(32)
    out += Array("data".utf8); le32(samples.count * 4)
    for x in samples { le32(Int(x.bitPattern)) }
    try Data(out).write(to: URL(fileURLWithPath: path))
}

/// CPU seconds used by this thread so far.
func threadCPU() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// Runs `input` through a fresh processor `repeats` times in 4096-frame blocks; returns the
/// output of the last run and the least CPU time of the runs.
func measure(_ input: [Float], channels: Int, repeats: Int,
             make: () throws -> (process: (inout [Float]) -> Void, flush: (inout [Float]) -> Void)) rethrows -> ([Float], Double) {
    var best = Double.infinity
    var output: [Float] = []
    for _ in 0..<repeats {
        let stage = try make()
        var out: [Float] = []
        out.reserveCapacity(input.count)
        let start = threadCPU()
        var offset = 0
        let block = 4096 * channels
        while offset < input.count {
            var buffer = Array(input[offset..<min(input.count, offset + block)])
            stage.process(&buffer)
            out += buffer
            offset += block
        }
        stage.flush(&out)
        best = min(best, threadCPU() - start)
        output = out
    }
    return (output, best)
}

func run() throws {
    let args = Array(CommandLine.arguments.dropFirst())
    let repeats = Int(ProcessInfo.processInfo.environment["DSPBENCH_REPEATS"] ?? "") ?? 3
    switch args.first {
    case "stretch" where args.count == 5:
        let engine = args[1]
        guard let rate = Double(args[2]), TimePitch.rateRange.contains(rate) else { throw BenchError(description: "bad rate \(args[2])") }
        let (format, input) = try readWAV(args[3])
        // The engine alone (no TimePitch around it), so 1× costs what the engine costs.
        let (output, cpu) = try measure(input, channels: format.channels, repeats: repeats) {
            let stretcher: any TimeStretcher
            switch engine {
            case "wsola": stretcher = WSOLAStretcher(sampleRate: format.sampleRate, channels: format.channels)
            case "sonic": stretcher = try SonicStretcher(sampleRate: format.sampleRate, channels: format.channels)
            case "rubberband", "rubberband-r3":
                stretcher = try RubberBandStretcher(sampleRate: format.sampleRate, channels: format.channels,
                                                    finer: engine == "rubberband-r3", speed: rate)
            default:
                throw BenchError(description: "unknown engine \(engine)")
            }
            stretcher.speed = rate
            var scratch: [Float] = []
            return ({ buffer in
                scratch.removeAll(keepingCapacity: true)
                buffer.withUnsafeBufferPointer { stretcher.process($0, into: &scratch) }
                swap(&buffer, &scratch)
            }, { stretcher.flush(into: &$0) })
        }
        try writeWAV(args[4], output, rate: format.sampleRate, channels: format.channels)
        let seconds = Double(input.count / format.channels) / Double(format.sampleRate)
        print("{\"engine\":\"\(engine)\",\"rate\":\(rate),\"audio_s\":\(seconds),\"cpu_s\":\(cpu),\"cpu_ms_per_audio_s\":\(cpu / seconds * 1000)}")
    case "chain" where args.count == 6:
        guard let rate = Double(args[1]), TimePitch.rateRange.contains(rate), let outputRate = Int(args[3]) else {
            throw BenchError(description: "usage: dspbench chain RATE EQ OUTPUT_RATE IN.wav OUT.wav")
        }
        let eq = try EQSettings.parse(args[2])
        let (format, input) = try readWAV(args[4])
        var outFormat = format
        let (output, cpu) = try measure(input, channels: format.channels, repeats: repeats) {
            let chain = DSPChain(rate: rate, eq: eq, outputRate: outputRate)
            outFormat = try chain.configure(input: format)
            return ({ chain.process(&$0) }, { chain.flush(into: &$0) })
        }
        try writeWAV(args[5], output, rate: outFormat.sampleRate, channels: outFormat.channels)
        let seconds = Double(input.count / format.channels) / Double(format.sampleRate)
        print("{\"engine\":\"chain\",\"rate\":\(rate),\"eq\":\"\(eq)\",\"output_rate\":\(outputRate),\"audio_s\":\(seconds),\"cpu_s\":\(cpu),\"cpu_ms_per_audio_s\":\(cpu / seconds * 1000)}")
    default:
        throw BenchError(description: "usage: dspbench stretch ENGINE RATE IN.wav OUT.wav | dspbench chain RATE EQ OUTPUT_RATE IN.wav OUT.wav")
    }
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("dspbench: \(error)\n".utf8))
    exit(1)
}
