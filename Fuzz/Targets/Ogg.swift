@testable import StreamShared

/// Ogg: the file reader (headers from the start, the last granule from the end) and the full
/// page walk (chains, multiplexed streams, damage), which must agree on the first link; the
/// page parser, resync and packet assembler on the raw input; the codec header parsers on it;
/// a pass-through channel's rewrite of the file into links, whole and in two pieces.
enum OggTarget {
    static func run(_ bytes: [UInt8]) {
        let source = MemoryBytes(bytes)
        let quick = try? OggReader.read(source)
        let full = try? OggReader.read(source, fullScan: true)
        for stream in [quick, full].compactMap({ $0 }) {
            require(!stream.links.isEmpty && stream.channels >= 1 && stream.channels <= 255 && stream.sampleRate > 0,
                    "stream \(stream.codec)")
            require(stream.skippedBytes >= 0 && stream.skippedBytes <= bytes.count, "skipped \(stream.skippedBytes)")
            if let seconds = stream.durationSeconds {
                require(seconds.isFinite && seconds >= 0 && seconds <= InputLimits.maxDurationSeconds, "duration \(seconds)")
            }
            for link in stream.links {
                for picture in link.comment?.pictures ?? [] {
                    require(picture.data.count < bytes.count, "picture of \(picture.data.count) bytes")
                }
            }
        }
        if let quick, let full { require(quick.first.serial == full.first.serial, "first link differs") }

        var assemblers: [UInt32: OggPacketAssembler] = [:]
        var offset = 0, total = 0
        while assemblers.count < 16, let (at, page) = OggPage.next(in: bytes[...], from: offset) {
            require(at >= offset && at + page.length <= bytes.count, "page \(at)+\(page.length) of \(bytes.count)")
            let body = bytes[(at + page.headerLength)..<(at + page.length)]
            var assembler = assemblers[page.serial] ?? OggPacketAssembler(serial: page.serial, maxPacketBytes: 1 << 20)
            if let packets = try? assembler.push(page, body: body) {
                for packet in packets {
                    total += packet.data.count
                    _ = try? OggCodec.identify(packet.data[...])
                }
            }
            assemblers[page.serial] = assembler
            offset = at + page.length
        }
        require(total <= bytes.count, "\(total) packet bytes from \(bytes.count)")
        rewriteIntoLinks(bytes)
        _ = try? OggCodec.identify(bytes[...])
        _ = try? VorbisIdentification.parseComment(bytes[...])
    }

    /// `OggLinkRewriter` whole and cut in two where the first byte says: the same pages either
    /// way, each one a page whose CRC checks with a serial the rewriter handed out, never more
    /// bytes out than in.
    static func rewriteIntoLinks(_ bytes: [UInt8]) {
        var whole = OggLinkRewriter(firstSerial: 0)
        let (used, pages) = whole.take(bytes[...], isComplete: true)
        require(used == bytes.count, "used \(used) of \(bytes.count)")
        require(pages.reduce(0) { $0 + $1.bytes.count } <= bytes.count, "more page bytes than input")
        for page in pages {
            let parsed = (try? OggPage.parse(page.bytes[...])) ?? nil
            require(parsed.map { $0.serial < whole.nextSerial && $0.length == page.bytes.count } ?? false,
                    "a page out that does not parse or has a stray serial")
        }
        var pieces = OggLinkRewriter(firstSerial: 0)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) * bytes.count / 256
        let (first, firstPages) = pieces.take(bytes[..<cut], isComplete: false)
        require(first <= cut, "used \(first) of \(cut)")
        let (second, secondPages) = pieces.take(bytes[first...], isComplete: true)
        require(first + second == bytes.count, "pieces used \(first) + \(second) of \(bytes.count)")
        // A cut never loses a page start (the last 3 bytes of junk are kept), so the pages are the same.
        require(firstPages + secondPages == pages, "pieces gave \(firstPages.count + secondPages.count) pages, whole \(pages.count)")
    }
}
