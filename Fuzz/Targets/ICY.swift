import StreamServer
import StreamShared

/// Radio parsers: ICY metadata, the frame splitter, and what a live source's request carries
/// (Basic credentials, a chunked body). The first byte picks the metaint (1...256) of an ICY
/// demux over the rest, every metadata block of which is decoded; then the same bytes go through
/// the MPEG and ADTS frame splitters, which must only ever move forward, the Authorization
/// parser, and the chunked-body decoder fed in two pieces split where the first byte says.
enum ICYTarget {
    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let rest = bytes.dropFirst()
        _ = try? ICYMetadata.decode(text: rest)
        if let metaint = try? ICYDemuxer(metaint: Int(first) + 1) {
            var demuxer = metaint
            var audio = 0
            for piece in demuxer.feed(rest) {
                switch piece {
                case .audio(let part): audio += part.count
                case .metadata(let text):
                    require(text.count % 16 == 0 && text.count <= ICYMetadata.maxTextBytes, "block of \(text.count) bytes")
                    _ = try? ICYMetadata.decode(text: text[...])
                }
            }
            require(audio <= rest.count, "more audio than input")
        }
        let title = String(decoding: rest.prefix(5000), as: UTF8.self)
        let block = ICYMetadata.encode(title: title)
        require(block.count == 1 + Int(block[0]) * 16, "encoded block length")
        require((try? ICYMetadata.title(in: block[1...])) != nil, "an encoded block does not decode")
        if let credentials = BasicCredentials.parse("Basic " + String(decoding: rest, as: UTF8.self)) {
            require(!credentials.user.contains(":"), "a user with a colon")
        }
        _ = BasicCredentials.parse(String(decoding: rest, as: UTF8.self))
        var decoder = ChunkedBodyDecoder()
        let cut = min(rest.count, Int(first) * 4)
        var total = 0
        for piece in [rest.prefix(cut), rest.dropFirst(cut)] {
            guard let (payload, used) = try? decoder.feed(piece) else { break }
            require(used <= piece.count && payload.count <= used, "decoder used \(used) of \(piece.count)")
            total += payload.count
            if used < piece.count { require(decoder.isComplete, "stopped early without completing") }
        }
        require(total <= rest.count, "more payload than input")
        for codec in [AudioFrameSplitter.Codec.mpeg, .adts] {
            var splitter = AudioFrameSplitter(codec: codec)
            var offset = rest.startIndex
            var steps = 0
            while offset < rest.endIndex, steps < 100_000 {
                steps += 1
                guard let step = try? splitter.next(in: rest[offset...], isComplete: true) else { break }
                switch step {
                case .frame(let frame):
                    require(frame.length > 0 && frame.length <= rest.endIndex - offset, "frame past the input")
                    offset += frame.length
                case .skip(let count):
                    require(count > 0, "a skip of nothing")
                    offset += min(count, rest.endIndex - offset)
                case .needMore:
                    offset = rest.endIndex
                }
            }
        }
    }
}
