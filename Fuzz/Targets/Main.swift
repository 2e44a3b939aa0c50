// The libFuzzer entry points. One binary holds every target; FUZZ_TARGET picks the one to run
// (libFuzzer owns the command line, so an environment variable is the clean way to choose).
#if canImport(Glibc)
import Glibc
#endif

/// The parsers the fuzzer can drive, by the FUZZ_TARGET name `make fuzz` uses.
enum FuzzTarget: String, CaseIterable {
    case analyze, decode, encode, mpeg, tags, adts, wav, mp4, ts, m3u8, playlist, http, range, icy, icystream, response, url, api, flac, ogg, oggdecode, aiff, alac, flacdecode, waveform, subsonic, rendition, credentials, lyrics

    /// Feeds one input to the parser; any thrown error is a normal outcome, a trap is a finding.
    func run(_ bytes: [UInt8]) {
        switch self {
        case .analyze: AnalyzeTarget.run(bytes)
        case .decode: DecodeTarget.run(bytes)
        case .encode: EncodeTarget.run(bytes)
        case .mpeg: MPEGTarget.run(bytes)
        case .tags: TagsTarget.run(bytes)
        case .adts: ADTSTarget.run(bytes)
        case .wav: WAVTarget.run(bytes)
        case .mp4: MP4Target.run(bytes)
        case .ts: TSTarget.run(bytes)
        case .m3u8: M3U8Target.run(bytes)
        case .rendition: RenditionTarget.run(bytes)
        case .playlist: PlaylistTarget.run(bytes)
        case .http: HTTPTarget.run(bytes)
        case .range: RangeTarget.run(bytes)
        case .icy: ICYTarget.run(bytes)
        case .icystream: ICYStreamTarget.run(bytes)
        case .response: ResponseTarget.run(bytes)
        case .url: URLTarget.run(bytes)
        case .api: APITarget.run(bytes)
        case .flac: FLACTarget.run(bytes)
        case .ogg: OggTarget.run(bytes)
        case .oggdecode: OggDecodeTarget.run(bytes)
        case .aiff: AIFFTarget.run(bytes)
        case .alac: ALACTarget.run(bytes)
        case .flacdecode: FLACDecodeTarget.run(bytes)
        case .waveform: WaveformTarget.run(bytes)
        case .subsonic: SubsonicTarget.run(bytes)
        case .credentials: CredentialsTarget.run(bytes)
        case .lyrics: LyricsTarget.run(bytes)
        }
    }

    /// The target named by FUZZ_TARGET; exits with a usage line when it is missing or unknown.
    static let selected: FuzzTarget = {
        let name = getenv("FUZZ_TARGET").map { String(cString: $0) } ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: " ")
            printError("streamfuzz: set FUZZ_TARGET to one of: \(names)")
            _exit(2)   // not exit(): LeakSanitizer would report the process's live globals
        }
        return target
    }()
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    _ = FuzzTarget.selected
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTarget.selected.run(bytes)
    return 0
}

/// Checks a property the parsers promise; a failure is a finding, so it traps like a crash.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        printError("streamfuzz: invariant failed: \(message())")
        abort()
    }
}

/// One line on stderr (file descriptor 2 directly: the C `stderr` global is not concurrency-safe).
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
