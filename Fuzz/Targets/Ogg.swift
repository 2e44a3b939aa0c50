@testable import StreamShared

/// Ogg: the file reader (headers from the start, the last granule from the end) and the full
/// page walk (chains, multiplexed streams, damage), which must agree on the first link; the
/// page parser, resync and packet assembler on the raw input; the codec header parsers on it.
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
        _ = try? OggCodec.identify(bytes[...])
        _ = try? VorbisIdentification.parseComment(bytes[...])
    }
}
