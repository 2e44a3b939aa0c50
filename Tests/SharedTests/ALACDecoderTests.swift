import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// The pure-Swift ALAC decoder: every ALAC file of the shared corpus bit for bit against
/// ffmpeg's decode (16, 20 and 24 bits, mono and stereo), and broken packets as typed errors.
@Suite struct ALACDecoderTests {
    /// Every packet of the file's ALAC track decoded, interleaved; nil when it is not ALAC.
    static func decodeAll(_ bytes: [UInt8]) throws -> (config: ALACSpecificConfig, samples: [Int32], refused: Int)? {
        let moov = try MP4Locator.moovRange(MemoryBytes(bytes))
        guard let track = try MP4Movie.parse(moov: bytes[moov]).audio, track.codec == "alac" else { return nil }
        let config = try track.alacConfig()
        var decoder = try ALACDecoder(config: config)
        var all: [Int32] = []
        var packet: [Int32] = []
        var refused = 0
        for n in 0..<track.sampleCount {
            let location = try #require(track.sampleLocation(n))
            // A broken packet is dropped, as ffmpeg drops it (counted, so the test can name it).
            do {
                try decoder.decode(packet: bytes[location.offset..<(location.offset + location.size)], into: &packet)
                all += packet
            } catch is FormatError {
                refused += 1
            }
        }
        return (config, all, refused)
    }

    /// ffmpeg's samples for the file with the edit list ignored (every packet, as ours), in
    /// the same scale: 16-bit as s16, deeper ones as s32 with the value in the top bits.
    static func reference(_ path: String, bitDepth: Int) -> [Int32]? {
        let options = ["-ignore_editlist", "1"]
        if bitDepth == 16 {
            return FFmpegPCM.s16(path, inputOptions: options)?.map(Int32.init)
        }
        guard let raw = FFmpegPCM.run(path, format: "s32le", inputOptions: options) else { return nil }
        return stride(from: 0, to: raw.count - 3, by: 4).map {
            Int32(bitPattern: UInt32(raw[$0]) | UInt32(raw[$0 + 1]) << 8 | UInt32(raw[$0 + 2]) << 16 | UInt32(raw[$0 + 3]) << 24)
                >> Int32(32 - bitDepth)
        }
    }

    /// Files with packets ffmpeg refuses too ("invalid samples per frame: 0"), and how many.
    static let brokenPackets = ["androidx__sample_alac_20bit.mp4": 1]

    @Test func corpusFiles_decodeBitExactLikeFFmpeg() throws {
        let corpus = TestPaths.packageRoot.appendingPathComponent("../shared/corpus").standardized
        var checked: [String] = []
        var depths: Set<Int> = []
        for folder in ["realworld-xiph/corpus", "realworld/corpus"] {
            let dir = corpus.appendingPathComponent(folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
                Issue.record("corpus folder \(dir.path) is missing")
                continue
            }
            for name in names.sorted() where name.hasSuffix(".m4a") || name.hasSuffix(".mp4") {
                let url = dir.appendingPathComponent(name)
                let bytes = [UInt8](try Data(contentsOf: url))
                guard let moov = try? MP4Locator.moovRange(MemoryBytes(bytes)),
                      (try? MP4Movie.parse(moov: bytes[moov]))?.audio?.codec == "alac" else { continue }
                let decoded: (config: ALACSpecificConfig, samples: [Int32], refused: Int)
                do {
                    guard let result = try Self.decodeAll(bytes) else { continue }
                    decoded = result
                } catch {
                    Issue.record("\(name): \(error)")
                    continue
                }
                #expect(decoded.refused == Self.brokenPackets[name, default: 0], "\(name) packets refused")
                let reference = try #require(Self.reference(url.path, bitDepth: decoded.config.bitDepth), "ffmpeg \(name)")
                #expect(decoded.samples.count == reference.count, "\(name) sample count")
                let mismatch = zip(decoded.samples, reference).enumerated().first { $0.element.0 != $0.element.1 }
                #expect(mismatch == nil, "\(name): first difference at sample \(mismatch?.offset ?? -1)")
                checked.append(name)
                depths.insert(decoded.config.bitDepth)
            }
        }
        #expect(checked.count >= 9, "ALAC files decoded: \(checked)")
        #expect(depths.isSuperset(of: [16, 20, 24]), "bit depths covered: \(depths)")
    }

    /// ffmpeg's own ALAC encodes, in a temporary folder: full-scale white noise (which the
    /// encoder stores as escape elements), a quiet tone (Rice-coded with zero runs), at 16 and
    /// 24 bits (24-bit uses shifted low bytes), mono and stereo, with a short last packet.
    @Test func ffmpegEncodes_decodeBitExact() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("alac-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sources = ["anoisesrc=a=1:c=white:d=0.5:r=44100", "sine=f=440:d=0.5:r=48000,volume=0.01",
                       "aevalsrc=exprs=0.5*sin(2*PI*300*t)|0.4*sin(2*PI*301*t)+0.001*random(0):d=0.37:s=96000"]
        var checked = 0
        for (index, source) in sources.enumerated() {
            for format in ["s16p", "s32p"] {
                let path = folder.appendingPathComponent("\(index)-\(format).m4a").path
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", source, "-c:a", "alac",
                                     "-sample_fmt", format, path]
                process.standardError = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                try #require(process.terminationStatus == 0, "ffmpeg encode \(source) \(format)")
                let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
                let decoded = try #require(try Self.decodeAll(bytes))
                #expect(decoded.refused == 0)
                #expect(decoded.config.bitDepth == (format == "s16p" ? 16 : 24))
                let reference = try #require(Self.reference(path, bitDepth: decoded.config.bitDepth))
                #expect(decoded.samples.count == reference.count, "\(source) \(format) sample count")
                let mismatch = zip(decoded.samples, reference).enumerated().first { $0.element.0 != $0.element.1 }
                #expect(mismatch == nil, "\(source) \(format): first difference at sample \(mismatch?.offset ?? -1)")
                checked += 1
            }
        }
        #expect(checked == 6)
    }

    /// A fuzz finding: a damaged stereo packet decorrelates to 17 bits. The output is cut to the
    /// bit depth as the reference decoder's 16-bit stores cut it. Built by hand: a Rice-coded CPE
    /// (order 0, every residual in the 9-ones escape form), u = 32767 and v = -32768 with mixing
    /// weight 1, so right = u − v = 65535, which 16 bits hold as -1.
    @Test func overflowingDecorrelation_isCutToTheBitDepth() throws {
        let config = ALACSpecificConfig(frameLength: 2, bitDepth: 16, numChannels: 2)
        var decoder = try ALACDecoder(config: config)
        var bits = BitWriter()
        bits.write(1, 3); bits.write(0, 4); bits.write(0, 12); bits.write(0, 4)     // CPE, compressed, no shift
        bits.write(0, 8); bits.write(1, 8)                                          // mixBits 0, mixRes 1
        for _ in 0..<2 { bits.write(0x00, 8); bits.write(0x80, 8) }                // mode 0, quant 0; pb factor 4, order 0
        for x in [65534, 65534, 65535, 65535] { bits.write(0x1FF, 9); bits.write(x, 17) }   // u: 32767 twice, v: -32768 twice
        bits.write(7, 3)
        var samples: [Int32] = []
        #expect(try decoder.decode(packet: bits.bytes[...], into: &samples) == 2)
        #expect(samples == [32767, -1, 32767, -1])
    }

    /// A stereo 16-bit escape (uncompressed) packet built by hand: CPE header, samples at full
    /// depth interleaved, END.
    @Test func escapePacket_readsSamplesPlainly() throws {
        let config = ALACSpecificConfig(frameLength: 2, bitDepth: 16, numChannels: 2)
        var decoder = try ALACDecoder(config: config)
        // tag 1 (3 bits), instance 0 (4), unused 0 (12), partial 0, shift 00, escape 1: 24 bits;
        // then L R L R (16 bits each), then END (7) and padding.
        var bits = BitWriter()
        bits.write(1, 3); bits.write(0, 4); bits.write(0, 12); bits.write(0, 1); bits.write(0, 2); bits.write(1, 1)
        for v in [1000, -1000, 32767, -32768] { bits.write(v & 0xFFFF, 16) }
        bits.write(7, 3)
        var samples: [Int32] = []
        #expect(try decoder.decode(packet: bits.bytes[...], into: &samples) == 2)
        #expect(samples == [1000, -1000, 32767, -32768])
    }

    @Test func brokenPackets_areTypedErrors() throws {
        let config = ALACSpecificConfig(frameLength: 16, bitDepth: 16, numChannels: 1)
        var decoder = try ALACDecoder(config: config)
        var samples: [Int32] = []
        func packet(_ build: (inout BitWriter) -> Void) -> [UInt8] {
            var bits = BitWriter()
            build(&bits)
            return bits.bytes
        }
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("no END", packet { $0.write(6, 3); $0.write(0, 4) }),
            ("pair in a mono stream", packet { $0.write(1, 3); $0.write(0, 32) }),
            ("unused bits set", packet { $0.write(0, 3); $0.write(0, 4); $0.write(5, 12); $0.write(0, 4) }),
            ("partial frame longer than the frame length", packet {
                $0.write(0, 3); $0.write(0, 4); $0.write(0, 12); $0.write(0b1000, 4); $0.write(17, 32)
            }),
            ("three shifted bytes", packet { $0.write(0, 3); $0.write(0, 4); $0.write(0, 12); $0.write(0b0110, 4) }),
            ("coupling element", packet { $0.write(2, 3); $0.write(0, 29) }),
            ("escape cut short", packet { $0.write(0, 3); $0.write(0, 4); $0.write(0, 12); $0.write(1, 4); $0.write(0, 16) }),
            ("END before the channels", packet { $0.write(7, 3); $0.write(0, 5) }),
            ("prediction mode 3", packet {
                $0.write(0, 3); $0.write(0, 4); $0.write(0, 12); $0.write(0, 4); $0.write(0, 16); $0.write(0x30, 8); $0.write(0, 8)
            }),
        ]
        for (name, bytes) in cases {
            #expect(throws: FormatError.self, "\(name)") { try decoder.decode(packet: bytes[...], into: &samples) }
        }
        #expect(throws: FormatError.self) { try ALACDecoder(config: ALACSpecificConfig(riceLimit: 0)) }
    }
}
