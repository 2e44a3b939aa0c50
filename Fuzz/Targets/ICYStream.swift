import StreamShared

/// The player's ICY reader (`ICYStreamReader`): the first byte picks the metaint (1...256) and the
/// second where the input is cut in two; the rest is a listener stream. Whatever the bytes, the
/// reader either throws its typed error or hands on every byte that is not a length byte or block
/// text as audio, in order, with updates at nondecreasing audio offsets, and reads the same way
/// whole and cut in two.
enum ICYStreamTarget {
    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 2 else { return }
        _ = try? ICYStreamReader.metaint(header: String(decoding: bytes.prefix(12), as: UTF8.self))
        let metaint = Int(bytes[0]) + 1
        let stream = bytes.dropFirst(2)
        let cut = stream.startIndex + min(stream.count, Int(bytes[1]) * 8)
        let whole = read(stream, metaint: metaint, pieces: [stream])
        let split = read(stream, metaint: metaint, pieces: [stream[..<cut], stream[cut...]])
        require(whole.audio == split.audio && whole.updates == split.updates && whole.failed == split.failed,
                "reading in two pieces differs from reading whole")
        require(whole.audio.count <= stream.count, "more audio than input")
        var previous = 0
        for update in whole.updates {
            require(update.audioOffset >= previous && update.audioOffset <= whole.audio.count, "update offset out of order")
            require(update.audioOffset % metaint == 0, "an update between blocks")
            previous = update.audioOffset
        }
        if !whole.failed {
            // Every input byte is audio, a length byte or block text: the audio is all the
            // audio runs, at most one metaint between blocks.
            require(whole.audio.count >= min(stream.count, metaint) || whole.audio.count == stream.count,
                    "the first audio run went missing")
        }
    }

    static func read(_ stream: ArraySlice<UInt8>, metaint: Int, pieces: [ArraySlice<UInt8>])
        -> (audio: [UInt8], updates: [ICYStreamReader.Update], failed: Bool) {
        guard var reader = try? ICYStreamReader(metaint: metaint) else { return ([], [], true) }
        var audio: [UInt8] = [], updates: [ICYStreamReader.Update] = []
        for piece in pieces {
            do {
                try reader.feed(piece, audio: { audio += $0 }, update: { updates.append($0) })
            } catch {
                require(!error.description.isEmpty, "an error without a message")
                return (audio, updates, true)
            }
        }
        return (audio, updates, false)
    }
}
