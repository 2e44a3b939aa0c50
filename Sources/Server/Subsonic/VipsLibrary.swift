#if canImport(Glibc)
import Glibc
#endif
internal import CVips

/// Why a cover could not be resized.
public enum CoverResizeError: Error, Equatable, CustomStringConvertible {
    /// libvips could not be loaded (or lacks a call): every resize fails the same way.
    case unavailable(String)
    /// The image was refused: not an image libvips reads, damaged, or over the size limits.
    case refused(String)
    /// The worker crashed, hung past its time, or answered garbage.
    case worker(String)

    public var description: String {
        switch self {
        case .unavailable(let why): return "libvips unavailable: \(why)"
        case .refused(let why): return "image refused: \(why)"
        case .worker(let why): return "cover worker: \(why)"
        }
    }
}

/// libvips, loaded with dlopen inside the cover worker only (`streamd cover-worker`), so the
/// server and its other workers never map it and its hundred dependencies. Owns the dlsym'd
/// function pointers; nothing past this type sees a pointer of libvips'.
final class VipsLibrary {
    private typealias Handle = UnsafeMutableRawPointer
    private let imageWidth: @convention(c) (Handle?) -> Int32
    private let imageHeight: @convention(c) (Handle?) -> Int32
    private let objectUnref: @convention(c) (Handle?) -> Void
    private let free: @convention(c) (Handle?) -> Void
    private let areaUnref: @convention(c) (Handle?) -> Void
    private let errorBuffer: @convention(c) () -> UnsafePointer<CChar>?
    private let errorClear: @convention(c) () -> Void
    private let newFromBuffer: Handle
    private let thumbnailBuffer: Handle
    private let jpegsaveBuffer: Handle
    private let arrayDoubleNew: Handle

    /// The library names tried in order (Debian's libvips42 for 8.x); `STREAMD_LIBVIPS` names another.
    static var candidates: [String] {
        if let name = getenv("STREAMD_LIBVIPS") { return [String(cString: name)] }
        return ["libvips.so.42"]
    }

    /// Loads and starts libvips for this process: one thread for its pipeline (a worker resizes
    /// one picture) and no operation cache (nothing is asked twice).
    init() throws(CoverResizeError) {
        var handle: UnsafeMutableRawPointer?
        var why = ""
        for name in Self.candidates {
            handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if handle != nil { break }
            why = dlerror().map { String(cString: $0) } ?? name
        }
        guard let handle else { throw .unavailable(why) }
        func symbol<T>(_ name: String, _ type: T.Type = T.self) throws(CoverResizeError) -> T {
            guard let address = dlsym(handle, name) else { throw .unavailable("\(name) is missing (libvips 8.12 or later is needed)") }
            return unsafeBitCast(address, to: T.self)
        }
        func raw(_ name: String) throws(CoverResizeError) -> Handle {
            guard let address = dlsym(handle, name) else { throw .unavailable("\(name) is missing (libvips 8.12 or later is needed)") }
            return address
        }
        let initialize: @convention(c) (UnsafePointer<CChar>?) -> Int32 = try symbol("vips_init")
        let concurrency: @convention(c) (Int32) -> Void = try symbol("vips_concurrency_set")
        let cacheMax: @convention(c) (Int32) -> Void = try symbol("vips_cache_set_max")
        imageWidth = try symbol("vips_image_get_width")
        imageHeight = try symbol("vips_image_get_height")
        objectUnref = try symbol("g_object_unref")
        free = try symbol("g_free")
        areaUnref = try symbol("vips_area_unref")
        errorBuffer = try symbol("vips_error_buffer")
        errorClear = try symbol("vips_error_clear")
        newFromBuffer = try raw("vips_image_new_from_buffer")
        thumbnailBuffer = try raw("vips_thumbnail_buffer")
        jpegsaveBuffer = try raw("vips_jpegsave_buffer")
        arrayDoubleNew = try raw("vips_array_double_newv")
        guard initialize("streamd") == 0 else { throw .unavailable("vips_init: \(lastError())") }
        concurrency(1)
        cacheMax(0)
    }

    /// libvips' error text (its buffer cleared), one line.
    private func lastError() -> String {
        let text = errorBuffer().map { String(cString: $0) } ?? ""
        errorClear()
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? "unknown error"
        return String(line.prefix(300))
    }

    /// The width and height in the image's header, without decoding its pixels.
    func dimensions(_ image: [UInt8]) throws(CoverResizeError) -> (width: Int, height: Int) {
        let size: (Int, Int)? = image.withUnsafeBytes { bytes in
            guard let header = cvips_header(newFromBuffer, bytes.baseAddress, bytes.count) else { return nil }
            defer { objectUnref(UnsafeMutableRawPointer(header)) }
            let pointer = UnsafeMutableRawPointer(header)
            return (Int(imageWidth(pointer)), Int(imageHeight(pointer)))
        }
        guard let size else { throw .refused(lastError()) }
        return size
    }

    /// A JPEG of `image` whose longer side is `size` pixels (or the original's, when smaller),
    /// its aspect kept, metadata stripped, transparency flattened onto white.
    func thumbnailJPEG(_ image: [UInt8], size: Int, quality: Int) throws(CoverResizeError) -> (jpeg: [UInt8], width: Int, height: Int) {
        let made: (jpeg: [UInt8], width: Int, height: Int)? = image.withUnsafeBytes { bytes in
            var thumbnail: OpaquePointer?
            guard cvips_thumbnail(thumbnailBuffer, bytes.baseAddress, bytes.count, Int32(clamping: size), &thumbnail) == 0,
                  let thumbnail else { return nil }
            let pointer = UnsafeMutableRawPointer(thumbnail)
            defer { objectUnref(pointer) }
            let background = cvips_background(arrayDoubleNew, 255)
            defer { areaUnref(background) }
            var output: UnsafeMutableRawPointer?
            var length = 0
            guard cvips_jpegsave(jpegsaveBuffer, thumbnail, Int32(clamping: quality), background, &output, &length) == 0,
                  let output else { return nil }
            defer { free(output) }
            let jpeg = Array(UnsafeRawBufferPointer(start: output, count: length))
            return (jpeg, Int(imageWidth(pointer)), Int(imageHeight(pointer)))
        }
        guard let made else { throw .refused(lastError()) }
        return made
    }
}
