import Foundation
import Testing
import TestSupport
@testable import StreamClient
import StreamShared

/// The radio client's pieces between the transport and the decoder: what makes a response a
/// live stream, the body with its ICY blocks taken out, and the player's title events.
@Suite(.ownThreads) struct LiveStreamTests {
    @Test func shoutcastStatusLine_isALiveStream() throws {
        let info = try #require(try LiveStreamInfo.detect(statusLine: "ICY 200 OK", headers: [("icy-metaint", "8192")]))
        #expect(info.metaint == 8192)
    }

    @Test func stationHeaders_withoutLength_areALiveStream() throws {
        let headers: [(name: String, value: String)] = [("Content-Type", "audio/mpeg"), ("icy-name", " Test FM "),
                                                         ("icy-genre", "Jazz"), ("icy-br", "128"), ("Transfer-Encoding", "chunked")]
        let info = try #require(try LiveStreamInfo.detect(statusLine: "HTTP/1.1 200 OK", headers: headers))
        #expect(info == LiveStreamInfo(metaint: nil, station: "Test FM", genre: "Jazz", bitrateKbps: 128))
    }

    @Test func aFile_orStationHeadersWithALength_isNoLiveStream() throws {
        #expect(try LiveStreamInfo.detect(statusLine: "HTTP/1.1 200 OK", headers: [("Content-Type", "audio/mpeg")]) == nil)
        #expect(try LiveStreamInfo.detect(statusLine: "HTTP/1.1 200 OK", headers: [("icy-name", "x"), ("Content-Length", "100")]) == nil)
    }

    @Test func badMetaint_isTypedError() {
        #expect(throws: ICYStreamError.badMetaint("0")) {
            _ = try LiveStreamInfo.detect(statusLine: "ICY 200 OK", headers: [("icy-metaint", "0")])
        }
    }

    /// `audio` with a block after every `metaint` bytes: the title at round 1, unchanged after.
    static func icyStream(_ audio: [UInt8], metaint: Int, title: String) -> [UInt8] {
        var stream: [UInt8] = []
        var offset = 0, round = 0
        while offset < audio.count {
            let end = min(audio.count, offset + metaint)
            stream += audio[offset..<end]
            if end - offset == metaint { stream += round == 1 ? ICYMetadata.encode(title: title) : ICYMetadata.empty }
            offset = end
            round += 1
        }
        return stream
    }

    @Test func liveBody_writesOnlyAudio_andPostsTheTitleAtItsOffset() throws {
        let audio = (0..<1000).map { UInt8($0 % 251) }
        let stream = Self.icyStream(audio, metaint: 100, title: "Artist - Title")
        let throttle = Throttle(capacity: 65_536)
        let state = LiveStreamState()
        let body = try LiveBody(info: LiveStreamInfo(metaint: 100), state: state, droppedAt: nil, logger: nil)
        var offset = 0
        while offset < stream.count {
            let end = min(stream.count, offset + 37)
            _ = try Array(stream[offset..<end]).withUnsafeBytes { try body.write($0, to: throttle, generation: throttle.currentGeneration) }
            offset = end
        }
        guard case .bytes(let written, _) = throttle.read(max: 65_536, timeout: 0) else { Issue.record("nothing written"); return }
        #expect(written == audio)
        #expect(state.take(through: 199).isEmpty, "the title applies from audio byte 200")
        #expect(state.take(through: 200).map(\.title) == ["Artist - Title"])
    }

    @Test func liveBody_afterADrop_recordsTheGap_onItsFirstAudio() throws {
        let state = LiveStreamState()
        let throttle = Throttle(capacity: 65_536)
        let now = Monotonic.now
        let dropped = Monotonic(nanoseconds: now.nanoseconds - min(now.nanoseconds, 250_000_000))
        let body = try LiveBody(info: LiveStreamInfo(), state: state, droppedAt: dropped, logger: nil)
        #expect(state.gapsMilliseconds.isEmpty)
        _ = try [1, 2, 3].withUnsafeBytes { try body.write($0, to: throttle, generation: throttle.currentGeneration) }
        _ = try [4].withUnsafeBytes { try body.write($0, to: throttle, generation: throttle.currentGeneration) }
        let gaps = state.gapsMilliseconds
        #expect(gaps.count == 1 && gaps[0] >= 250 && gaps[0] < 5000, "\(gaps)")
    }

    @Test func liveBody_blockThatIsNotMetadata_isTypedError() throws {
        let state = LiveStreamState()
        let throttle = Throttle(capacity: 65_536)
        let body = try LiveBody(info: LiveStreamInfo(metaint: 4), state: state, droppedAt: nil, logger: nil)
        // After 4 audio bytes a length byte of 1 and 16 bytes of binary audio.
        let stream: [UInt8] = [9, 9, 9, 9, 1, 0xFF, 0xFB, 0x90, 0x01, 0x02] + [UInt8](repeating: 0x11, count: 11)
        #expect(throws: ICYStreamError.self) {
            _ = try stream.withUnsafeBytes { try body.write($0, to: throttle, generation: throttle.currentGeneration) }
        }
    }

    @Test func player_emitsATitleEvent_perChange_andListsTitlesInItsStats() async throws {
        // The titles come from the source's control, whatever the source: a file stands in.
        let path = try PlayerDSPTests.toneWAV(seconds: 0.1)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let player = try Player(url: path, output: NullOutput())
        let events = Task { var titles: [String] = []; for await case .title(let t) in player.events { titles.append(t) }; return titles }
        let update = { (title: String) in
            ICYStreamReader.Update(audioOffset: 0, title: title, fields: [.init(key: "StreamTitle", value: title)], unparsedText: nil)
        }
        player.control.live.post(update("One"), at: 100)
        player.control.live.post(update("One"), at: 200)          // repeated: no change
        player.control.live.post(update("Two"), at: 300)
        player.applyTitles(through: 250, position: 1.5)
        #expect(player.streamTitle == "One")
        player.applyTitles(through: 300, position: 2.5)
        player.continuation.finish()
        #expect(await events.value == ["One", "Two"])
        #expect(player.streamTitle == "Two")
        #expect(player.playedTags?.title == "Two", "the queue's status line shows the stream title")
        let titles = player.commands.withLock { _ in player.statsStorage.titles }
        #expect(titles == [StreamTitleChange(atSeconds: 1.5, title: "One"), StreamTitleChange(atSeconds: 2.5, title: "Two")])
        #expect(player.commands.withLock { _ in player.statsStorage.json }.contains(#""titles":[{"at_s":1.5,"title":"One"},{"at_s":2.5,"title":"Two"}]"#))
    }
}
