import StreamHTTP
import StreamShared

/// Radio parsers: ICY metadata text (decode, encode → decode), the frame splitter, and what a
/// live source's request carries (Basic credentials, a chunked body). The bytes after the first
/// go through the metadata decoder, the MPEG and ADTS frame splitters, which must only ever move
/// forward, the Authorization parser, and the chunked-body decoder fed in two pieces split where
/// the first byte says. Whole listener streams are the `icystream` target's.
enum ICYTarget {
    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let rest = bytes.dropFirst()
        _ = try? ICYMetadata.decode(text: rest)
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
        for codec in [AudioFrameSplitter.Codec.mpeg, .adts, .ogg] {
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
