import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamShared

/// The libmp3lame wrapper: a sine in, MP3 out, decoded again by the mpg123 program.
@Suite struct LAMEEncoderTests {
    /// Interleaved sine of `hz` at `rate`, `seconds` long, amplitude 0.5, the same in every channel.
    static func sine(hz: Double, rate: Int, channels: Int, seconds: Double) -> [Float] {
        let frames = Int(Double(rate) * seconds)
        var samples = [Float](repeating: 0, count: frames * channels)
        for i in 0..<frames {
            let value = Float(0.5 * sin(2 * Double.pi * hz * Double(i) / Double(rate)))
            for c in 0..<channels { samples[i * channels + c] = value }
        }
        return samples
    }

    /// Every frame of `bytes` (none may be skipped: no Xing frame, no tag, no junk).
    static func frames(_ bytes: [UInt8]) throws -> [AudioFrameSplitter.Frame] {
        var splitter = AudioFrameSplitter(codec: .mpeg)
        var offset = 0
        var frames: [AudioFrameSplitter.Frame] = []
        while offset < bytes.count {
            switch try splitter.next(in: bytes[offset...], isComplete: true) {
            case .frame(let frame):
                frames.append(frame)
                offset += frame.length
            case .skip(let count):
                Issue.record("\(count) bytes at \(offset) are no audio frame")
                offset += count
            case .needMore:
                return frames
            }
        }
        return frames
    }

    /// The mpg123 program's decoding of `bytes`: 16-bit samples, interleaved.
    static func decodeWithMPG123(_ bytes: [UInt8]) throws -> [Int16] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("lame-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let mp3 = dir.appendingPathComponent("sine.mp3"), raw = dir.appendingPathComponent("sine.raw")
        try Data(bytes).write(to: mp3)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mpg123")
        process.arguments = ["-q", "-e", "s16", "-o", "raw", "-a", raw.path, mp3.path]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "mpg123 exit status")
        let data = try Data(contentsOf: raw)
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Frequency of channel `channel` of `samples` from its zero crossings (rising) over the middle.
    static func frequency(_ samples: [Int16], channels: Int, channel: Int, rate: Int) -> Double {
        let frames = samples.count / channels
        let from = frames / 4, to = frames * 3 / 4
        var rising = 0
        for i in (from + 1)..<to where samples[(i - 1) * channels + channel] < 0 && samples[i * channels + channel] >= 0 {
            rising += 1
        }
        return Double(rising) * Double(rate) / Double(to - from)
    }

    func roundTrip(rate: Int, channels: Int, kbps: Int, hz: Double) throws {
        let encoder = try LAMEEncoder(sampleRate: rate, channels: channels, kbps: kbps)
        let input = Self.sine(hz: hz, rate: rate, channels: channels, seconds: 2)
        var mp3: [UInt8] = []
        // In uneven pieces, as a channel feeds it.
        var offset = 0
        for piece in [1, 999, 4096, 17, 30_000] where offset < input.count {
            let end = min(input.count, offset + piece * channels)
            try encoder.encode(input[offset..<end], appendingTo: &mp3)
            offset = end
        }
        try encoder.encode(input[offset...], appendingTo: &mp3)
        encoder.flush(appendingTo: &mp3)
        let frames = try Self.frames(mp3)
        #expect(!frames.isEmpty)
        for (i, frame) in frames.enumerated() {
            #expect(frame.sampleRate == rate && frame.channels == channels, "frame \(i): \(frame.sampleRate) Hz \(frame.channels) ch")
            #expect(frame.bitrate == kbps * 1000, "frame \(i): \(frame.bitrate) bit/s, CBR \(kbps) kbit/s asked")
            #expect(frame.samples == encoder.samplesPerFrame)
        }
        let inputFrames = input.count / channels
        let encodedSamples = frames.count * encoder.samplesPerFrame
        // All the input, the encoder's delay, and at most the rest of a frame and one more.
        #expect(encodedSamples >= inputFrames + encoder.encoderDelay, "\(encodedSamples) samples encoded of \(inputFrames)")
        #expect(encodedSamples <= inputFrames + encoder.encoderDelay + 2 * encoder.samplesPerFrame + 576,
                "\(encodedSamples) samples encoded of \(inputFrames)")
        let decoded = try Self.decodeWithMPG123(mp3)
        #expect(decoded.count == encodedSamples * channels, "mpg123 decoded \(decoded.count / channels) of \(encodedSamples)")
        for channel in 0..<channels {
            let measured = Self.frequency(decoded, channels: channels, channel: channel, rate: rate)
            #expect(abs(measured - hz) < 3, "channel \(channel): \(measured) Hz, \(hz) Hz encoded")
        }
        // The level survives (0.5 peak → RMS 0.354 of full scale), over the middle second.
        let frameCount = decoded.count / channels
        var sum = 0.0
        for i in (frameCount / 4)..<(frameCount * 3 / 4) { sum += pow(Double(decoded[i * channels]) / 32768, 2) }
        let rms = (sum / Double(frameCount / 2)).squareRoot()
        #expect(abs(rms - 0.3536) < 0.02, "RMS \(rms)")
    }

    @Test func stereo44100_at128_roundTripsThroughMPG123() throws {
        try roundTrip(rate: 44_100, channels: 2, kbps: 128, hz: 1000)
    }

    @Test func mono22050_at64_roundTripsThroughMPG123() throws {
        try roundTrip(rate: 22_050, channels: 1, kbps: 64, hz: 440)
    }

    @Test func stereo48000_at192_roundTripsThroughMPG123() throws {
        try roundTrip(rate: 48_000, channels: 2, kbps: 192, hz: 2500)
    }

    @Test func refusedSettings_throw() {
        #expect(throws: EncoderError.self) { try LAMEEncoder(sampleRate: 96_000, channels: 2, kbps: 128) }
        #expect(throws: EncoderError.self) { try LAMEEncoder(sampleRate: 44_100, channels: 6, kbps: 128) }
        #expect(throws: EncoderError.self) { try LAMEEncoder(sampleRate: 44_100, channels: 2, kbps: 1000) }
    }

    @Test func emptyAndPartialInput_encodeNothingAndDoNotTrap() throws {
        let encoder = try LAMEEncoder(sampleRate: 44_100, channels: 2, kbps: 128)
        var out: [UInt8] = []
        try encoder.encode([], appendingTo: &out)
        try encoder.encode([0.1], appendingTo: &out)   // half a stereo frame: dropped
        #expect(out.isEmpty)
    }
}

/// `--channel NAME=PATH[,shuffle][,format=opus|mp3][,bitrate=KBPS|,passthrough]`.
@Suite struct ChannelSpecTests {
    @Test func options_inAnyOrder() throws {
        #expect(try ChannelSpec.parse("a=x") == ChannelSpec(name: "a", path: "x"))
        #expect(try ChannelSpec.parse("a=x,shuffle") == ChannelSpec(name: "a", path: "x", shuffle: true))
        #expect(try ChannelSpec.parse("a=x,bitrate=96") == ChannelSpec(name: "a", path: "x", bitrate: 96))
        #expect(try ChannelSpec.parse("a=x,bitrate=192,shuffle") == ChannelSpec(name: "a", path: "x", shuffle: true, bitrate: 192))
        #expect(try ChannelSpec.parse("a=x,shuffle,bitrate=64") == ChannelSpec(name: "a", path: "x", shuffle: true, bitrate: 64))
        #expect(try ChannelSpec.parse("a=x,passthrough") == ChannelSpec(name: "a", path: "x", passthrough: true))
        #expect(try ChannelSpec.parse("a=x,passthrough,shuffle") == ChannelSpec(name: "a", path: "x", shuffle: true, passthrough: true))
        // A comma that is no option stays in the path.
        #expect(try ChannelSpec.parse("a=Best of, Vol. 2,shuffle") == ChannelSpec(name: "a", path: "Best of, Vol. 2", shuffle: true))
    }

    @Test func badBitrates_throw() {
        for text in ["a=x,bitrate=", "a=x,bitrate=7", "a=x,bitrate=321", "a=x,bitrate=12k", "a=x,bitrate=-1", "a=x,bitrate=99999999999999999999"] {
            #expect(throws: ChannelSpec.ParseError.self, "\(text)") { try ChannelSpec.parse(text) }
        }
        #expect(throws: ChannelSpec.ParseError.self) { try ChannelSpec.parse("a=,bitrate=128") }
        // passthrough sends the files as they are; a bitrate would transcode them.
        #expect(throws: ChannelSpec.ParseError.self) { try ChannelSpec.parse("a=x,passthrough,bitrate=128") }
    }

    @Test func format_opusOrMP3_withItsBitrates() throws {
        var opus = ChannelSpec(name: "a", path: "x", bitrate: 400)
        opus.format = .opus
        // Opus takes 6...510 kbit/s, whichever side of the format the bitrate is written.
        #expect(try ChannelSpec.parse("a=x,format=opus,bitrate=400") == opus)
        #expect(try ChannelSpec.parse("a=x,bitrate=400,format=opus") == opus)
        #expect(try ChannelSpec.parse("a=x,format=opus").format == .opus)
        #expect(try ChannelSpec.parse("a=x,format=opus,bitrate=6").bitrate == 6)
        #expect(try ChannelSpec.parse("a=x,format=mp3,shuffle").format == .mp3)
        for text in ["a=x,format=opus,bitrate=511", "a=x,format=opus,bitrate=5", "a=x,format=mp3,bitrate=400", "a=x,bitrate=400",
                     "a=x,format=vorbis", "a=x,format=", "a=x,format=opus,passthrough", "a=x,passthrough,format=mp3"] {
            #expect(throws: ChannelSpec.ParseError.self, "\(text)") { try ChannelSpec.parse(text) }
        }
        do {
            _ = try ChannelSpec.parse("a=x,format=opus,bitrate=600")
            Issue.record("bitrate 600 taken")
        } catch {
            #expect(error.description.contains("from 6 to 510 for Opus"), "\(error)")
        }
    }

    @Test func transcodedFormat_keepsTheFirstRateWhenMP3HasIt() {
        #expect(ChannelTracks.transcodedFormat(firstRate: 48_000, kbps: 128).sampleRate == 48_000)
        #expect(ChannelTracks.transcodedFormat(firstRate: 22_050, kbps: 128).sampleRate == 22_050)
        #expect(ChannelTracks.transcodedFormat(firstRate: 22_050, kbps: 192).sampleRate == 44_100, "MPEG-2 stops at 160 kbit/s")
        #expect(ChannelTracks.transcodedFormat(firstRate: 96_000, kbps: 128).sampleRate == 44_100)
        #expect(ChannelTracks.transcodedFormat(firstRate: 44_100, kbps: 128).channels == 2)
    }
}

/// A transcoding channel's stereo mix of tracks with more (or fewer) channels.
@Suite struct DownmixTests {
    static func mix(_ speakers: [Speaker], _ frame: [Float], to outputs: Int = 2) -> [Float] {
        var out: [Float] = []
        Downmix(speakers: speakers, outputChannels: outputs).apply(frame, into: &out)
        return out
    }

    @Test func monoAndStereo_keepTheirLevel() {
        #expect(Self.mix(Speaker.defaultLayout(channels: 1), [0.5]) == [0.5, 0.5])
        #expect(Self.mix(Speaker.defaultLayout(channels: 2), [0.25, -0.75]) == [0.25, -0.75])
    }

    @Test func aac51_centreGoesToBothSides_andTheLFEIsLeftOut() {
        let aac = Speaker.aac(channels: 6)
        // libfaad2's order (measured on ffmpeg's 5.1 AAC): L, R, C, Ls, Rs, LFE.
        let centre = Self.mix(aac, [0, 0, 1, 0, 0, 0])
        #expect(abs(centre[0] - centre[1]) < 1e-6 && centre[0] > 0.25, "\(centre)")
        let left = Self.mix(aac, [1, 0, 0, 0, 0, 0])
        #expect(left[0] > 0.3 && left[1] == 0, "front left only on the left: \(left)")
        let rightSurround = Self.mix(aac, [0, 0, 0, 0, 1, 0])
        #expect(rightSurround[0] == 0 && rightSurround[1] > 0.2, "\(rightSurround)")
        #expect(Self.mix(aac, [0, 0, 0, 0, 0, 1]) == [0, 0], "LFE")
        // Full scale everywhere cannot clip.
        let loud = Self.mix(aac, [1, 1, 1, 1, 1, 1])
        #expect(loud.allSatisfy { $0 <= 1.0001 }, "\(loud)")
    }

    @Test func wav51_isLeftRightFirst_andAMaskReordersIt() {
        let wav = Speaker.wav(channels: 6, mask: nil)
        #expect(wav == [.left, .right, .center, .lfe, .leftSurround, .rightSurround])
        let left = Self.mix(wav, [1, 0, 0, 0, 0, 0])
        #expect(left[0] > 0.3 && left[1] == 0, "\(left)")
        // Quadraphonic by its mask: FL FR BL BR.
        let quad = Speaker.wav(channels: 4, mask: 0x33)
        #expect(quad == [.left, .right, .leftSurround, .rightSurround])
        let back = Self.mix(quad, [0, 0, 0, 1])
        #expect(back[0] == 0 && back[1] > 0.3, "\(back)")
        // A mask naming fewer speakers than channels: the rest are unknown and left out.
        #expect(Speaker.wav(channels: 3, mask: 0x3) == [.left, .right, .other])
    }

    @Test func unknownLayouts_keepTheFirstTwo_andMonoOutputAverages() {
        #expect(Self.mix([.other, .other, .other], [0.5, -0.5, 1]) == [0.5, -0.5])
        #expect(Self.mix(Speaker.defaultLayout(channels: 2), [0.5, -0.25], to: 1) == [0.125])
    }
}
