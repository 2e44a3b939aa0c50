import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// The ALAC magic cookie in its three wrappings, broken cookies, the sample entry in MP4 and
/// QuickTime form, and every ALAC file of the shared corpus against ffprobe.
@Suite struct ALACConfigTests {
    typealias B = MP4Builder

    /// ALACSpecificConfig bytes for `config`.
    static func cookie(_ c: ALACSpecificConfig) -> [UInt8] {
        be32(c.frameLength) + [UInt8(c.compatibleVersion), UInt8(c.bitDepth), UInt8(c.riceHistoryMult),
                               UInt8(c.riceInitialHistory), UInt8(c.riceLimit), UInt8(c.numChannels)]
            + be16(c.maxRun) + be32(c.maxFrameBytes) + be32(c.avgBitRate) + be32(c.sampleRate)
    }

    static let sample = ALACSpecificConfig(frameLength: 4096, bitDepth: 24, numChannels: 1, maxRun: 255,
                                           maxFrameBytes: 12_345, avgBitRate: 1_000_000, sampleRate: 96_000)

    @Test func bareCookie_readsEveryField() throws {
        let config = try ALACSpecificConfig.parse(cookie: Self.cookie(Self.sample)[...])
        #expect(config == Self.sample)
        #expect(config.riceHistoryMult == 40 && config.riceInitialHistory == 10 && config.riceLimit == 14)
    }

    @Test func wrappedCookies_areUnwrapped() throws {
        let atom = B.fullBox("alac", Self.cookie(Self.sample))
        let chan = B.fullBox("chan", be32(100) + be32(0) + be32(0))
        #expect(try ALACSpecificConfig.parse(cookie: atom[...]) == Self.sample)
        #expect(try ALACSpecificConfig.parse(cookie: (atom + chan)[...]) == Self.sample)
        let frma = B.box("frma", B.fourCC("alac"))
        #expect(try ALACSpecificConfig.parse(cookie: (frma + atom + chan)[...]) == Self.sample)
        #expect(throws: FormatError.self) { try ALACSpecificConfig.parse(cookie: (B.box("frma", B.fourCC("mp4a")) + atom)[...]) }
    }

    @Test func brokenCookies_areTypedErrors() {
        func with(_ change: (inout ALACSpecificConfig) -> Void) -> [UInt8] {
            var c = Self.sample
            change(&c)
            return Self.cookie(c)
        }
        let cases: [(String, [UInt8], FormatError)] = [
            ("short", Array(Self.cookie(Self.sample).prefix(23)), .truncated(component: "alac-config", offset: 0, needed: 24)),
            ("version 1", with { $0.compatibleVersion = 1 }, .unsupported(component: "alac-config", reason: "compatible version 1")),
            ("zero frame length", with { $0.frameLength = 0 }, .outOfRange(component: "alac-config", field: "frameLength", value: "0")),
            ("huge frame length", with { $0.frameLength = 0x7FFF_FFFF },
             .outOfRange(component: "alac-config", field: "frameLength", value: "2147483647")),
            ("bit depth 8", with { $0.bitDepth = 8 }, .invalid(component: "alac-config", reason: "bit depth 8", offset: 5)),
            ("zero channels", with { $0.numChannels = 0 }, .invalid(component: "alac-config", reason: "0 channels", offset: 9)),
            ("nine channels", with { $0.numChannels = 9 }, .invalid(component: "alac-config", reason: "9 channels", offset: 9)),
            ("kb 40", with { $0.riceLimit = 40 }, .invalid(component: "alac-config", reason: "Rice limit kb 40", offset: 8)),
            ("zero rate", with { $0.sampleRate = 0 }, .invalid(component: "alac-config", reason: "sample rate 0", offset: 20)),
            ("alac atom larger than the cookie", be32(1000) + B.fourCC("alac") + be32(0) + Self.cookie(Self.sample),
             .invalid(component: "alac-config", reason: "alac atom of 1000 bytes", offset: 0)),
            ("frma of 4 bytes", be32(4) + B.fourCC("frma") + B.fourCC("alac"),
             .invalid(component: "alac-config", reason: "frma atom of 4 bytes", offset: 0)),
        ]
        for (name, bytes, expected) in cases {
            #expect(throws: expected, "\(name)") { try ALACSpecificConfig.parse(cookie: bytes[...]) }
        }
    }

    @Test func mp4SampleEntry_carriesTheCookie() throws {
        var fixture = MP4Fixture()
        fixture.sampleEntry = B.audioEntry("alac", channels: 1, rate: 0, children: B.fullBox("alac", Self.cookie(Self.sample)))
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(track.codec == "alac")
        #expect(track.sampleRate == 96_000, "the cookie's rate when the 16.16 field cannot hold it")
        #expect(try track.alacConfig() == Self.sample)
    }

    @Test func quickTimeSampleEntry_findsTheCookieInWave() throws {
        var fixture = MP4Fixture()
        let wave = B.box("wave", B.box("frma", B.fourCC("alac")) + B.fullBox("alac", Self.cookie(Self.sample)) + be32(8) + be32(0))
        fixture.sampleEntry = B.audioEntry("alac", version: 1, channels: 1, rate: 44_100, children: wave)
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        #expect(try track.alacConfig() == Self.sample)
    }

    @Test func nonALACTrack_hasNoCookie() throws {
        let track = try #require(try MP4Movie.parse(moov: MP4Fixture().moov()[...]).audio)
        #expect(throws: FormatError.self) { try track.alacConfig() }
    }

    // MARK: - The shared real-world corpus

    /// ffprobe's extradata hex dump ("00000000: 0000 0024 616c ...  text") as bytes.
    static func extradata(_ lines: [String]) -> [UInt8] {
        var bytes: [UInt8] = []
        for line in lines {
            guard line.count > 10, line.prefix(8).allSatisfy(\.isHexDigit), line.dropFirst(8).first == ":" else { continue }
            // The hex columns end at the two spaces before the text column.
            let hex = line.dropFirst(10).components(separatedBy: "  ").first ?? ""
            for group in hex.split(separator: " ") {
                var digits = Substring(group)
                while digits.count >= 2, let byte = UInt8(digits.prefix(2), radix: 16) {
                    bytes.append(byte)
                    digits = digits.dropFirst(2)
                }
            }
        }
        return bytes
    }

    @Test func corpusCookies_matchFFprobe() throws {
        let corpus = TestPaths.packageRoot.appendingPathComponent("../shared/corpus").standardized
        var checked: [String] = []
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
                      let track = (try? MP4Movie.parse(moov: bytes[moov]))?.audio, track.codec == "alac" else { continue }
                let config = try track.alacConfig()
                let probe = try #require(FFmpegPCM.ffprobe(["-select_streams", "a:0", "-show_streams", "-show_data"], path: url.path),
                                         "ffprobe \(name)")
                func value(_ key: String) -> String? {
                    probe.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
                }
                #expect(value("codec_name") == "alac", "\(name)")
                #expect(value("sample_rate") == String(config.sampleRate), "\(name) rate")
                #expect(value("channels") == String(config.numChannels), "\(name) channels")
                #expect(value("bits_per_raw_sample") == String(config.bitDepth), "\(name) bits")
                // ffmpeg keeps the whole 'alac' atom as extradata: the same cookie, field for field.
                let extradata = Self.extradata(probe)
                #expect(try ALACSpecificConfig.parse(cookie: extradata[...]) == config, "\(name) cookie")
                checked.append(name)
            }
        }
        // refs.tsv lists 9 ALAC files in the xiph corpus; the other corpus adds its own copies.
        #expect(checked.count >= 9, "ALAC files checked: \(checked)")
    }
}
