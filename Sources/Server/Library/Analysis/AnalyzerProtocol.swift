import StreamShared
import StreamHTTP

/// The messages between streamd and its analyzer worker, on the worker's stdin and stdout.
///
/// Every message is a frame: a 32-bit little-endian length, then that many bytes. The worker
/// starts with the `hello` frame; then, for each request frame (a timeout in milliseconds, the
/// mode and a path), it answers with one frame: `0` and an encoded `TrackAnalysis`, or `1` and the
/// analyzer's error message. Answers come in the order of the requests, one file at a time,
/// so a worker that dies names the file that killed it even when several requests were sent
/// at once (the catalog's quick scan sends them in batches).
package enum AnalyzerProtocol {
    /// The hidden subcommand of streamd that runs an analyzer worker (`AnalyzerWorker`).
    public static let workerSubcommand = "analyze-worker"

    /// The worker's first frame: the protocol, so a stale or foreign binary is noticed.
    package static let hello = Array("streamd-analyzer/2".utf8)

    /// How much of a file the worker reads.
    package enum Mode: UInt8, Sendable {
        /// The whole file: exact frame count and seek index (`TrackAnalyzer.analyze`), HLS plan.
        case full = 0
        /// Headers and tags only (`TrackAnalyzer.describe`): what the catalog lists.
        case quick = 1
    }
    /// The largest frame either side accepts (a week of audio indexed every 0.5 s is 19 MiB).
    static let maxFrame = 64 << 20

    /// What the worker says about one file.
    package enum Answer: Equatable {
        case analysis(TrackAnalysis)
        /// The analyzer threw: the file is not audio we can serve.
        case failure(String)
    }

    /// `payload` with its length in front.
    package static func frame(_ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4 + payload.count)
        let length = UInt32(clamping: payload.count)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
        return out + payload
    }

    static func request(path: String, timeoutMillis: Int, mode: Mode = .full) -> [UInt8] {
        let millis = UInt32(clamping: timeoutMillis)
        var payload: [UInt8] = []
        for shift in stride(from: 0, to: 32, by: 8) { payload.append(UInt8(truncatingIfNeeded: millis >> UInt32(shift))) }
        payload.append(mode.rawValue)
        return frame(payload + Array(path.utf8))
    }

    package static func parseRequest(_ payload: [UInt8]) throws(FormatError) -> (path: String, timeoutMillis: Int, mode: Mode) {
        var reader = ByteReader(payload, component: "analyzer request")
        let millis = Int(try reader.readU32LE())
        let modeByte = try reader.readU8()
        guard let mode = Mode(rawValue: modeByte) else {
            throw .invalid(component: "analyzer request", reason: "mode \(modeByte)", offset: 4)
        }
        return (String(decoding: reader.rest, as: UTF8.self), millis, mode)
    }

    package static func encode(_ answer: Answer) -> [UInt8] {
        switch answer {
        case .analysis(let analysis): return frame([0] + analysis.encoded())
        case .failure(let message): return frame([1] + Array(message.utf8))
        }
    }

    static func parseAnswer(_ payload: [UInt8]) throws(FormatError) -> Answer {
        guard let kind = payload.first else {
            throw .truncated(component: "analyzer answer", offset: 0, needed: 1)
        }
        switch kind {
        case 0: return .analysis(try TrackAnalysis(encoded: payload.dropFirst()))
        case 1: return .failure(String(decoding: payload.dropFirst(), as: UTF8.self))
        default: throw .invalid(component: "analyzer answer", reason: "kind \(kind)", offset: 0)
        }
    }
}

/// Collects bytes as they arrive and hands out whole frames.
package struct FrameAssembler {
    private var buffer: [UInt8] = []
    /// Where the next frame starts in `buffer`: frames taken are dropped from the front only once
    /// they are half the buffer (a batch's answers arrive together; dropping each from the front
    /// moved the rest every time).
    private var start = 0

    package init() {}

    /// Appends bytes read from the pipe.
    package mutating func append(_ bytes: ArraySlice<UInt8>) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer += bytes
    }

    /// The next whole frame's payload; nil until it has all arrived; throws when its length is
    /// past `AnalyzerProtocol.maxFrame`.
    package mutating func next() throws(FormatError) -> [UInt8]? {
        guard buffer.count - start >= 4 else { return nil }
        let length = Int(buffer[start]) | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2]) << 16 | Int(buffer[start + 3]) << 24
        guard length <= AnalyzerProtocol.maxFrame else {
            throw .invalid(component: "analyzer frame", reason: "length \(length) is over the limit", offset: 0)
        }
        guard buffer.count - start >= 4 + length else { return nil }
        let payload = Array(buffer[(start + 4)..<(start + 4 + length)])
        start += 4 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return payload
    }
}
