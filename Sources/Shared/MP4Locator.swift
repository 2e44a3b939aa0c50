/// Finds the moov box among the top-level boxes of an MP4 file with small reads (it may follow
/// the mdat), for the readers that need only the movie: HLS planning and channel decoding.
public enum MP4Locator {
    /// The byte range of the top-level moov box. Throws `FormatError` when a box overruns the
    /// file, there is no moov in the first 10,000 boxes, or the moov is over 256 MiB.
    public static func moovRange(_ source: some RandomAccessBytes) throws -> Range<Int> {
        var offset = 0
        var boxes = 0
        while offset < source.size, boxes < 10_000 {
            boxes += 1
            let head = try source.read(at: offset, count: 16)
            guard let header = try MP4BoxHeader.parse(head[...], at: 0) else { break }
            let size = header.size ?? (source.size - offset)
            guard size >= header.headerSize, size <= source.size - offset else {
                throw FormatError.invalid(component: "mp4", reason: "box '\(header.type)' overruns the file", offset: offset)
            }
            if header.type == "moov" {
                guard size <= 256 * 1024 * 1024 else {
                    throw FormatError.unsupported(component: "mp4", reason: "moov of \(size) bytes")
                }
                return offset..<(offset + size)
            }
            offset += size
        }
        throw FormatError.invalid(component: "mp4", reason: "no moov box", offset: 0)
    }
}
