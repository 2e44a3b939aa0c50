@testable import StreamShared

/// The MPEG-TS demuxer: the input as one segment, and cut in two as consecutive HLS segments.
enum TSTarget {
    static func run(_ bytes: [UInt8]) {
        var whole = TSDemuxer()
        if let audio = try? whole.demux(bytes[...]) {
            require(audio.elementaryStream.count <= bytes.count, "\(audio.elementaryStream.count) bytes out of \(bytes.count)")
        }
        let cut = (bytes.count / 2) / TSDemuxer.packetSize * TSDemuxer.packetSize
        var split = TSDemuxer()
        _ = try? split.demux(bytes[..<cut], flush: false)
        _ = try? split.demux(bytes[cut...])
    }
}
