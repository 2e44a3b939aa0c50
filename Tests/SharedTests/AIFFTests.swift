import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// AIFF/AIFF-C headers built here (every compression type, chunk order, pad bytes, hostile
/// sizes), and every AIFF file of the shared real-world corpus against ffmpeg's reading of it.
@Suite struct AIFFTests {
    /// An 80-bit extended number holding a whole-number `rate`.
    static func extended(_ rate: Int) -> [UInt8] {
        let shift = 63 - (Int.bitWidth - 1 - rate.leadingZeroBitCount)
        return be16(16383 + 63 - shift) + be64(rate << shift)
    }

    static func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
        Array(id.utf8) + be32(body.count) + body + (body.count & 1 == 1 ? [0] : [])
    }

    static func comm(channels: Int = 2, frames: Int, bits: Int = 16, rate: [UInt8] = extended(44_100),
                     compression: String? = nil, name: String = "") -> [UInt8] {
        var body = be16(channels) + be32(frames) + be16(bits) + rate
        if let compression {
            // The name is a Pascal string padded to an even length.
            var pascal = [UInt8(name.utf8.count)] + Array(name.utf8)
            if pascal.count & 1 == 1 { pascal.append(0) }
            body += Array(compression.utf8) + pascal
        }
        return chunk("COMM", body)
    }

    static func ssnd(_ samples: [UInt8], offset: Int = 0, blockSize: Int = 0) -> [UInt8] {
        chunk("SSND", be32(offset) + be32(blockSize) + [UInt8](repeating: 0xEE, count: offset) + samples)
    }

    static func form(_ chunks: [UInt8]) -> [UInt8] { form("AIFF", chunks) }

    static func form(_ type: String, _ chunks: [UInt8]) -> [UInt8] {
        Array("FORM".utf8) + be32(4 + chunks.count) + Array(type.utf8) + chunks
    }

    static func samples(_ file: [UInt8]) throws -> [Float] {
        let info = try AIFF.parse(file[...])
        var out: [Float] = []
        let start = info.dataOffset, end = info.dataOffset + info.frameCount(fileSize: file.count) * info.format.blockAlign
        AIFFSampleConverter(format: info.format).convert(file[start..<end], appendingTo: &out)
        return out
    }

    @Test func plainAIFF_readsCommonAndSound() throws {
        let file = Self.form(Self.comm(frames: 2) + Self.ssnd([0x7F, 0xFF, 0x80, 0x00, 0x00, 0x01, 0xFF, 0xFF]))
        let info = try AIFF.parse(file[...])
        #expect(!info.isAIFC)
        #expect(info.format.channels == 2)
        #expect(info.format.sampleRate == 44_100)
        #expect(info.format.declaredFrames == 2)
        #expect(info.format.bitsPerSample == 16)
        #expect(info.format.blockAlign == 4)
        #expect(info.format.encoding == .integer)
        #expect(!info.format.littleEndian)
        #expect(info.dataOffset == 12 + 26 + 16)
        #expect(info.frameCount(fileSize: file.count) == 2)
        #expect(try Self.samples(file) == [32767 / 32768, -1, 1 / 32768, -1 / 32768])
    }

    @Test func extendedRates_areExact() throws {
        for rate in [1, 8000, 11_025, 22_050, 44_100, 48_000, 96_000, 192_000, 384_000, 1_536_000] {
            let info = try AIFF.parse(Self.form(Self.comm(frames: 0, rate: Self.extended(rate)))[...])
            #expect(info.format.sampleRate == Double(rate))
            #expect(info.format.roundedSampleRate == rate)
        }
        // The classic Macintosh rate 22254.545454...: 0x400DADDD1745D1745D17, the value a Double
        // nearest it (one rounding, no drift from a digit-by-digit conversion).
        let mac = be16(0x400D) + be64(Int(bitPattern: 0xADDD_1745_D174_5D17))
        let info = try AIFF.parse(Self.form(Self.comm(frames: 0, rate: mac))[...])
        #expect(info.format.sampleRate == Double(UInt64(0xADDD_1745_D174_5D17)) / 0x1p49)
        #expect(info.format.roundedSampleRate == 22_255)
    }

    @Test func brokenRates_areRefused() throws {
        let cases: [(String, [UInt8])] = [
            ("infinite", be16(0x7FFF) + be64(Int(bitPattern: 0x8000_0000_0000_0000))),
            ("NaN", be16(0x7FFF) + be64(Int(bitPattern: 0xC000_0000_0000_0000))),
            ("negative", be16(0xC00E) + be64(Int(bitPattern: 0xAC44_0000_0000_0000))),
            ("zero", be16(0) + be64(0)),
            ("tiny", be16(0x3FFE) + be64(Int(bitPattern: 0x8000_0000_0000_0000))),           // 0.5 Hz
            ("absurd", be16(0x4030) + be64(Int(bitPattern: 0x8000_0000_0000_0000))),         // 2^49 Hz
            ("huge exponent", be16(0x7FFE) + be64(Int(bitPattern: 0x8000_0000_0000_0000))),
        ]
        for (name, rate) in cases {
            #expect(throws: FormatError.self, "\(name) rate") {
                try AIFF.parse(Self.form(Self.comm(frames: 0, rate: rate))[...])
            }
        }
    }

    @Test func compressionTypes_mapToEncodings() throws {
        let cases: [(String, PCMCoding, Bool, Int)] = [
            ("NONE", .integer, false, 2), ("sowt", .integer, true, 2), ("fl32", .float, false, 4), ("FL32", .float, false, 4),
            ("fl64", .float, false, 8), ("FL64", .float, false, 8), ("ulaw", .muLaw, false, 1), ("ULAW", .muLaw, false, 1),
            ("alaw", .aLaw, false, 1), ("ALAW", .aLaw, false, 1),
        ]
        for (type, encoding, little, width) in cases {
            let file = Self.form("AIFC", Self.chunk("FVER", be32(Int(AIFF.aifcVersion1)))
                                 + Self.comm(channels: 1, frames: 0, compression: type, name: "x"))
            let info = try AIFF.parse(file[...])
            #expect(info.isAIFC)
            #expect(info.formatVersion == AIFF.aifcVersion1)
            #expect(info.format.compressionType == type)
            #expect(info.format.encoding == encoding, "\(type)")
            #expect(info.format.littleEndian == little, "\(type)")
            #expect(info.format.bytesPerSample == width, "\(type)")
        }
    }

    @Test func otherCompressionTypes_areRefusedByName() {
        for type in ["ima4", "MAC3", "G728", "Qclp", "raw "] {
            let file = Self.form("AIFC", Self.comm(frames: 0, compression: type, name: "codec"))
            #expect(throws: FormatError.unsupported(component: "aiff", reason: "AIFF-C compression type '\(type)'")) {
                try AIFF.parse(file[...])
            }
        }
    }

    @Test func aifcWithShortCommon_isBigEndianPCM() throws {
        let info = try AIFF.parse(Self.form("AIFC", Self.comm(frames: 0))[...])
        #expect(info.format.compressionType == "NONE")
    }

    @Test func sampleConversion_coversEveryEncoding() throws {
        func converted(_ type: String, bits: Int = 16, channels: Int = 1, _ bytes: [UInt8]) throws -> [Float] {
            let widths: [String: Int] = ["fl32": 4, "fl64": 8, "ulaw": 1, "alaw": 1]
            let width: Int = widths[type] ?? (bits + 7) / 8
            let frames = bytes.count / width / channels
            return try Self.samples(Self.form("AIFC", Self.comm(channels: channels, frames: frames, bits: bits, compression: type)
                                              + Self.ssnd(bytes)))
        }
        #expect(try converted("sowt", [0x00, 0x80, 0xFF, 0x7F]) == [-1, 32767 / 32768])
        // 8-bit AIFF samples are signed (WAV's are unsigned).
        #expect(try converted("NONE", bits: 8, [0x80, 0x00, 0x7F, 0xFF]) == [-1, 0, 127 / 128, -1 / 128])
        // 20 bits left-justified in 3 bytes, 12 in 2: the low bits are zero and scale away.
        #expect(try converted("NONE", bits: 20, [0x80, 0x00, 0x00, 0x40, 0x00, 0x10]) == [-1, 0.5 + 1.0 / 524_288])
        #expect(try converted("NONE", bits: 12, [0xFF, 0xF0]) == [-1 / 2048])
        #expect(try converted("NONE", bits: 32, [0x40, 0, 0, 0]) == [0.5])
        #expect(try converted("NONE", bits: 24, channels: 2, [0x40, 0, 0, 0xC0, 0, 0]) == [0.5, -0.5])
        #expect(try converted("fl32", [0x3F, 0x00, 0x00, 0x00, 0xBF, 0x80, 0x00, 0x00]) == [0.5, -1])
        #expect(try converted("fl64", [0x3F, 0xD0, 0, 0, 0, 0, 0, 0]) == [0.25])
        #expect(try converted("ulaw", [0x00, 0xFF, 0x80]) == [Float(G711.muLawToLinear(0)) / 32768, 0,
                                                              Float(G711.muLawToLinear(0x80)) / 32768])
        #expect(try converted("alaw", [0xD5, 0x55]) == [Float(G711.aLawToLinear(0xD5)) / 32768, Float(G711.aLawToLinear(0x55)) / 32768])
    }

    @Test func chunksInAnyOrder_soundBeforeCommonAndPadBytes() throws {
        // SSND first, an odd-sized text chunk (pad byte) in between, COMM last, ID3 and ANNO after.
        let title: [UInt8] = [0] + Array("Tagged".utf8)
        var id3: [UInt8] = Array("ID3".utf8) + [3, 0, 0]
        id3 += synchsafe(10 + title.count)
        id3 += Array("TIT2".utf8) + be32(title.count) + [0, 0] + title
        var chunks: [UInt8] = Self.ssnd([1, 2, 3, 4], offset: 3, blockSize: 0)
        chunks += Self.chunk("NAME", Array("Odd".utf8))
        chunks += Self.chunk("AUTH", Array("Someone".utf8))
        chunks += Self.chunk("(c) ", Array("2026 x".utf8))
        chunks += Self.chunk("ANNO", Array("one".utf8))
        chunks += Self.chunk("ANNO", Array("two".utf8))
        chunks += Self.comm(channels: 1, frames: 2)
        chunks += Self.chunk("ID3 ", id3)
        let file = Self.form(chunks)
        let info = try AIFF.parse(file[...])
        #expect(info.dataOffset == 12 + 16 + 3)
        #expect(info.dataSize == 4)
        #expect(Array(file[info.dataOffset..<(info.dataOffset + 4)]) == [1, 2, 3, 4])
        #expect(info.name == "Odd")
        #expect(info.author == "Someone")
        #expect(info.copyright == "2026 x")
        #expect(info.annotations == ["one", "two"])
        #expect(info.tags.title == "Tagged")       // ID3 wins over NAME
        #expect(info.tags.artist == "Someone")     // AUTH fills the gap
        #expect(info.frameCount(fileSize: file.count) == 2)
    }

    @Test func truncatedSound_countsTheFramesPresent() throws {
        let whole = Self.form(Self.comm(channels: 1, frames: 100) + Self.ssnd([UInt8](repeating: 0, count: 200)))
        let cut = Array(whole.prefix(whole.count - 150))
        let info = try AIFF.parse(cut[...])
        #expect(info.format.declaredFrames == 100)
        #expect(info.frameCount(fileSize: cut.count) == 25)
        // A declared count smaller than the chunk wins.
        let short = Self.form(Self.comm(channels: 1, frames: 10) + Self.ssnd([UInt8](repeating: 0, count: 200)))
        #expect(try AIFF.parse(short[...]).frameCount(fileSize: short.count) == 10)
    }

    @Test func hostileHeaders_areTypedErrors() {
        let cases: [(String, [UInt8], FormatError?)] = [
            ("not FORM", Array("RIFF\0\0\0\u{4}WAVE".utf8), .invalid(component: "aiff", reason: "not an IFF FORM", offset: 0)),
            ("other FORM type", Self.form("8SVX", []), .invalid(component: "aiff", reason: "FORM type '8SVX' is not AIFF or AIFC",
                                                                 offset: 8)),
            ("short", Array("FORM".utf8), .truncated(component: "aiff", offset: 0, needed: 12)),
            ("no COMM", Self.form(Self.chunk("NAME", [65])), nil),
            ("zero channels", Self.form(Self.comm(channels: 0, frames: 0)), nil),
            ("negative channels", Self.form(Self.comm(channels: 0xFFFF, frames: 0)), nil),
            ("zero bits", Self.form(Self.comm(frames: 0, bits: 0)), nil),
            ("33 bits", Self.form(Self.comm(frames: 0, bits: 33)), nil),
            ("huge frame count", Self.form(Self.comm(frames: 0xFFFF_FFFF, rate: Self.extended(1))), nil),
            ("COMM of 0 bytes", Self.form(Self.chunk("COMM", [])), nil),
            ("COMM past the end", Self.form(Array("COMM".utf8) + be32(0x7FFF_FFF0) + [0, 1]), nil),
            ("frames without SSND", Self.form(Self.comm(frames: 5)), nil),
            ("SSND offset past its chunk", Self.form(Self.comm(frames: 1) + Array("SSND".utf8) + be32(8) + be32(9) + be32(0)), nil),
            ("SSND too small", Self.form(Self.comm(frames: 1) + Self.chunk("SSND", [0, 0, 0])), nil),
            ("two COMM", Self.form(Self.comm(frames: 0) + Self.comm(frames: 0)), nil),
            ("two SSND", Self.form(Self.comm(frames: 0) + Self.ssnd([]) + Self.ssnd([])), nil),
        ]
        for (name, bytes, expected) in cases {
            do {
                let info = try AIFF.parse(bytes[...])
                Issue.record("\(name): parsed as \(info)")
            } catch let error as FormatError {
                if let expected { #expect(error == expected, "\(name)") }
            } catch {
                Issue.record("\(name): untyped error \(error)")
            }
        }
    }

    @Test func manyEmptyChunks_stopAtTheLimit() throws {
        var chunks: [UInt8] = []
        for _ in 0..<(AIFF.maxChunks + 5) { chunks += Self.chunk("JUNK", []) }
        #expect(throws: FormatError.self) { try AIFF.parse(Self.form(chunks + Self.comm(frames: 0))[...]) }
    }

    // MARK: - The shared real-world corpus

    /// ../shared/corpus beside the checkout (read in place).
    static var corpus: URL { TestPaths.packageRoot.appendingPathComponent("../shared/corpus").standardized }

    /// Files of the corpus that ffmpeg cannot read either, with the error each must get.
    static let refused: [String: FormatError] = [
        "jaudiotagger__test138.aiff": .unsupported(component: "aiff", reason: "AIFF-C compression type 'G728'"),
        "musicmeta__CWE-835-01.aiff": .invalid(component: "aiff", reason: "COMM chunk of 0 bytes", offset: 12),
        "taglib__segfault.aif": .invalid(component: "aiff", reason: "COMM chunk of 0 bytes", offset: 12),
        "taglib__excessive_alloc.aif": .invalid(component: "aiff", reason: "FORM type 'AI?F' is not AIFF or AIFC", offset: 8),
    ]

    /// AFsp's test files with bytes after the declared frames inside SSND ("yyyyyy"): ffmpeg
    /// decodes them as 6 more samples, the header (and ffprobe's duration) says 9 frames.
    static let trailingJunk = ["musicmeta__Poffset.aif": 9, "musicmeta__Ptjunk.aif": 9]

    /// refs.tsv of the xiph corpus: one row per file, columns named by the header line.
    static func references() throws -> [String: [String: String]] {
        let text = try String(contentsOf: corpus.appendingPathComponent("realworld-xiph/refs.tsv"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        guard let header = lines.first else { return [:] }
        var rows: [String: [String: String]] = [:]
        for line in lines.dropFirst() where line.count == header.count {
            rows[line[0]] = Dictionary(uniqueKeysWithValues: zip(header, line))
        }
        return rows
    }

    @Test func corpusFiles_matchFFmpeg() throws {
        let refs = try Self.references()
        var files: [URL] = []
        for folder in ["realworld-xiph/corpus", "realworld/corpus"] {
            let dir = Self.corpus.appendingPathComponent(folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else {
                Issue.record("corpus folder \(dir.path) is missing")
                continue
            }
            let extensions = ["aif", "aiff", "aifc"]
            for name in names.sorted() where extensions.contains(name.split(separator: ".").last.map { $0.lowercased() } ?? "") {
                files.append(dir.appendingPathComponent(name))
            }
        }
        #expect(files.count >= 26, "AIFF files found: \(files.count)")
        var refusedSeen = 0
        for url in files {
            let name = url.lastPathComponent
            let bytes = [UInt8](try Data(contentsOf: url))
            if let expected = Self.refused[name] {
                refusedSeen += 1
                #expect(throws: expected, "\(name)") { try AIFF.parse(bytes[...]) }
                continue
            }
            let ref = try #require(refs[name], "\(name) has no refs.tsv row")
            let info: AIFFInfo
            do { info = try AIFF.parse(bytes[...]) } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            let format = info.format
            #expect(String(format.roundedSampleRate) == ref["ff_rate"], "\(name) rate")
            #expect(String(format.channels) == ref["ff_channels"], "\(name) channels")
            let bits = format.encoding == .integer ? format.bitsPerSample : format.bytesPerSample * 8
            #expect(String(bits) == ref["ff_bits"], "\(name) bits")
            let frames = info.frameCount(fileSize: bytes.count)
            let expectedFrames = Self.trailingJunk[name] ?? Int(ref["ffmpeg_frames"] ?? "")
            #expect(frames == expectedFrames, "\(name) frames")
            let duration = try #require(Double(ref["ff_duration"] ?? ""), "\(name) duration")
            #expect(abs(Double(frames) / format.sampleRate - duration) < 0.0005, "\(name) duration")
            // Every whole frame converts, to samples in range.
            var samples: [Float] = []
            let end = info.dataOffset + frames * format.blockAlign
            AIFFSampleConverter(format: format).convert(bytes[info.dataOffset..<end], appendingTo: &samples)
            #expect(samples.count == frames * format.channels, "\(name) samples")
            #expect(samples.allSatisfy { !$0.isFinite || abs($0) <= 1 || format.encoding == .float }, "\(name) range")
        }
        #expect(refusedSeen == Self.refused.count)
    }

    /// The 16-bit files decode to ffmpeg's samples exactly (s16be, and sowt's s16le).
    @Test func corpusSixteenBitSamples_matchFFmpegDecode() throws {
        let dir = Self.corpus.appendingPathComponent("realworld-xiph/corpus")
        var checked = 0
        for name in ["mutagen__with-id3.aif", "xiphflac__AIFF-C-sowt-tag.aifc", "taglib__duplicate_id3v2.aiff",
                     "cpython__pluck-ulaw.aifc", "taglib__alaw.aifc", "cpython__pluck-pcm8.aiff"] {
            let url = dir.appendingPathComponent(name)
            guard let bytes = try? [UInt8](Data(contentsOf: url)) else {
                Issue.record("\(url.path) is missing")
                continue
            }
            guard let reference = FFmpegPCM.s16(url.path) else {
                Issue.record("ffmpeg could not decode \(name)")
                continue
            }
            let info = try AIFF.parse(bytes[...])
            let frames = info.frameCount(fileSize: bytes.count)
            var samples: [Float] = []
            AIFFSampleConverter(format: info.format).convert(bytes[info.dataOffset..<(info.dataOffset + frames * info.format.blockAlign)],
                                                             appendingTo: &samples)
            let ours = samples.map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) }
            #expect(ours == reference, "\(name)")
            checked += 1
        }
        #expect(checked == 6)
    }
}

/// ffmpeg's decode of a file as raw samples, for comparisons with the project's own readers.
enum FFmpegPCM {
    /// ffmpeg's decode of `path` as raw samples in `format`; nil when it cannot run or fails.
    static func run(_ path: String, format: String, inputOptions: [String] = []) -> [UInt8]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-v", "error"] + inputOptions + ["-i", path, "-f", format, "-"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? [UInt8](data) : nil
    }

    static func s16(_ path: String, inputOptions: [String] = []) -> [Int16]? {
        guard let raw = run(path, format: "s16le", inputOptions: inputOptions) else { return nil }
        return stride(from: 0, to: raw.count - 1, by: 2).map { Int16(bitPattern: UInt16(raw[$0]) | UInt16(raw[$0 + 1]) << 8) }
    }

    /// `ffprobe -v error ARGUMENTS -of default=nw=1 PATH` as its lines; nil when it fails.
    static func ffprobe(_ arguments: [String], path: String) -> [String]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error"] + arguments + ["-of", "default=nw=1", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
