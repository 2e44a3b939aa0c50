#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamLibrary

/// The child side of cover resizes: `streamd cover-worker` reads requests on stdin (the
/// longest side wanted and the picture's bytes), decodes and shrinks each with libvips, and
/// writes one answer per request on stdout, until stdin ends (the server keeps a few alive and
/// reuses them: `CoverResizer`). A crafted picture that crashes the decoder, loops in it or
/// asks for gigabytes ends this process only (its address space is capped and an alarm ends it),
/// and the server sends the original or its error instead.
///
/// Messages are `AnalyzerProtocol` frames (32-bit little-endian length, payload). Request:
/// size (u32 LE), then the picture. Answer: `0`, width and height (u32 LE each), then the JPEG;
/// or `1` and why the picture was refused.
public enum CoverWorker {
    /// The hidden subcommand that runs the worker.
    public static let subcommand = "cover-worker"
    /// The worker's option for fault drills (`--fault trap|hang|garbage`): it traps, spins or
    /// answers garbage instead of resizing. The server never passes it.
    public static let faultOption = "--fault"
    /// Largest picture taken (bytes): a cover file beside the tracks or a tag's picture.
    public static let maxInputBytes = 32 << 20
    /// Largest picture decoded (pixels): 8,000 x 8,000. A header claiming more is refused
    /// before any pixel is decoded.
    public static let maxPixels = 64_000_000
    /// JPEG quality of the thumbnails.
    static let quality = 85
    /// Address space the worker may take: libvips decodes a 64-megapixel picture in strips, far
    /// under this.
    static let maxAddressSpace = 2 << 30

    enum Kind: UInt8 {
        case thumbnail = 0, refused = 1
    }

    /// A decoded answer.
    enum Answer: Equatable {
        case thumbnail(jpeg: [UInt8], width: Int, height: Int)
        case refused(String)
    }

    static func request(_ image: [UInt8], size: Int) -> [UInt8] {
        let bits = UInt32(clamping: size)
        var payload: [UInt8] = []
        payload.reserveCapacity(4 + image.count)
        for shift in stride(from: 0, to: 32, by: 8) { payload.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
        return AnalyzerProtocol.frame(payload + image)
    }

    static func parseRequest(_ payload: [UInt8]) throws(FormatError) -> (size: Int, image: ArraySlice<UInt8>) {
        var reader = ByteReader(payload, component: "cover request")
        let size = Int(try reader.readU32LE())
        guard (1...4096).contains(size) else { throw .invalid(component: "cover request", reason: "size \(size)", offset: 0) }
        guard reader.remaining <= maxInputBytes else {
            throw .unsupported(component: "cover request", reason: "picture of \(reader.remaining) bytes")
        }
        return (size, reader.rest)
    }

    static func answer(_ answer: Answer) -> [UInt8] {
        switch answer {
        case .thumbnail(let jpeg, let width, let height):
            var payload: [UInt8] = [Kind.thumbnail.rawValue]
            for value in [width, height] {
                let bits = UInt32(clamping: value)
                for shift in stride(from: 0, to: 32, by: 8) { payload.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
            }
            return AnalyzerProtocol.frame(payload + jpeg)
        case .refused(let why):
            return AnalyzerProtocol.frame([Kind.refused.rawValue] + Array(why.utf8.prefix(1000)))
        }
    }

    static func parseAnswer(_ payload: [UInt8]) throws(FormatError) -> Answer {
        var reader = ByteReader(payload, component: "cover answer")
        switch Kind(rawValue: try reader.readU8()) {
        case .thumbnail:
            let width = Int(try reader.readU32LE()), height = Int(try reader.readU32LE())
            guard width > 0, height > 0, reader.remaining > 0 else {
                throw .invalid(component: "cover answer", reason: "\(width)x\(height), \(reader.remaining) bytes", offset: 0)
            }
            return .thumbnail(jpeg: Array(reader.rest), width: width, height: height)
        case .refused:
            return .refused(String(decoding: reader.rest, as: UTF8.self))
        case nil:
            throw .invalid(component: "cover answer", reason: "unknown kind", offset: 0)
        }
    }

    /// Resizes the requested pictures, one answer each, until stdin ends (exit 0) or a request
    /// is malformed (2); returns the process exit status.
    public static func run(fault: String = "", alarmSeconds: UInt32 = 30) -> Int32 {
        WorkerSide.becomeExpendable()
        var limit = rlimit(rlim_cur: rlim_t(maxAddressSpace), rlim_max: rlim_t(maxAddressSpace))
        setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit)
        var requests = WorkerRequests(chunkBytes: 64 * 1024)
        var served = 0
        while true {
            let request: [UInt8]?
            // An idle worker waits without an alarm; each request gets its own.
            do { request = try requests.next(beforeWaiting: { alarm(0) }) } catch { return 2 }
            // The server let this worker go (or went away): between requests, a normal end.
            guard let request else { return served == 0 ? 2 : 0 }
            // A second line of defence: a decoder that loops ends even if the server is gone.
            alarm(alarmSeconds)
            guard let (size, image) = try? parseRequest(request) else { return 2 }
            switch fault {
            case "trap":
                // A trap as a decoder bug would make one: a Double too large for Int.
                let ticks = Double(UInt64.max) * 2
                if Int(ticks) != 0 { return 3 }
            case "hang":
                while true { sched_yield() }
            case "garbage":
                return WorkerSide.writeAll(AnalyzerProtocol.frame([0x7F, 1, 2])) ? 0 : 1
            default: break
            }
            guard WorkerSide.writeAll(answer(resize(Array(image), size: size))) else { return 1 }
            alarm(0)
            served += 1
        }
    }

    static func resize(_ image: [UInt8], size: Int) -> Answer {
        do {
            let vips = try VipsLibrary()
            let (width, height) = try vips.dimensions(image)
            guard width > 0, height > 0, width * height <= maxPixels else {
                return .refused("\(width)x\(height) pixels is over the \(maxPixels) limit")
            }
            let made = try vips.thumbnailJPEG(image, size: size, quality: quality)
            return .thumbnail(jpeg: made.jpeg, width: made.width, height: made.height)
        } catch {
            return .refused("\(error)")
        }
    }
}
