@testable import StreamShared

/// FLAC: the whole-file reader (ID3v2 in front, metadata blocks, first frame, trailing tags,
/// the last frame when STREAMINFO has no count), the frame scanner and header parser over the
/// raw input, and the Vorbis comment and PICTURE parsers on it directly.
enum FLACTarget {
    static func run(_ bytes: [UInt8]) {
        if let stream = try? FLACReader.read(MemoryBytes(bytes)) {
            let info = stream.streamInfo
            require(info.sampleRate > 0 && info.channels >= 1 && info.channels <= 8 && info.bitsPerSample >= 4
                        && info.bitsPerSample <= 32, "stream info \(info)")
            require(stream.metadataEnd <= stream.audioStart && stream.audioStart < stream.audioEnd
                        && stream.audioEnd <= bytes.count, "audio \(stream.audioStart)..<\(stream.audioEnd) of \(bytes.count)")
            if let seconds = stream.durationSeconds {
                require(seconds.isFinite && seconds >= 0 && seconds <= InputLimits.maxDurationSeconds, "duration \(seconds)")
            }
            for picture in stream.pictures { require(picture.data.count < bytes.count, "picture of \(picture.data.count) bytes") }
        }
        let scanner = FLACFrameScanner(bytes[...], isComplete: true)
        var offset = 0, frames = 0
        while frames < 64, let frame = scanner.nextFrame(from: offset) {
            require(frame.offset >= offset && frame.length > frame.header.length && frame.offset + frame.length <= bytes.count,
                    "frame \(frame.offset)+\(frame.length) of \(bytes.count)")
            require(frame.header.blockSize >= 1 && frame.header.blockSize <= 65535, "block size \(frame.header.blockSize)")
            offset = frame.offset + frame.length
            frames += 1
        }
        if let last = scanner.lastFrame(window: bytes.count) {
            require(last.offset + last.length == bytes.count, "last frame \(last.offset)+\(last.length) of \(bytes.count)")
        }
        if let header = try? FLACFrameHeader.parse(bytes[...]) {
            require(header.length <= FLACFrameHeader.maxLength && header.length <= bytes.count, "header of \(header.length) bytes")
        }
        if let comment = try? VorbisComment.parse(bytes[...]) {
            require(comment.fields.count <= bytes.count / 4, "\(comment.fields.count) fields from \(bytes.count) bytes")
            _ = comment.tags
        }
        if let picture = try? FLACPicture.parse(bytes[...]) {
            require(picture.data.count <= bytes.count, "picture of \(picture.data.count) bytes")
        }
    }
}
