import Foundation
import Testing
import TestSupport
@testable import StreamHLS
@testable import StreamHTTP
@testable import StreamShared

/// `streamd --live`'s source: a thread that plans the track and feeds its segments to the live
/// segmenter; on the first pass the live segments are the VOD segments byte for byte.
@Suite struct HLSLiveSourceTests {
    @Test(arguments: ["adts.aac", "cbr-128k-44k.mp3", "track.m4a"])
    func firstWindow_isThereAtStart_andIsTheVODSegments(file: String) throws {
        let path = TestPaths.media.appendingPathComponent(file).path
        guard FileManager.default.fileExists(atPath: path) else {
            if GeneratedMedia.isRequired { Issue.record("\(path) is missing: run media/make-media.sh") }
            return
        }
        let source = try HLSLiveSource(name: "loop", path: path)
        source.start()
        try source.waitUntilPlaying()
        let (plan, segmenter) = try #require(source.running)
        let playlist = try #require(segmenter.playlist())
        #expect(playlist.segments.count == HLSLiveSource.windowSize, "a full window at once")
        #expect(playlist.mediaSequence == 0 && !playlist.endList && playlist.playlistType == nil)
        #expect(playlist.targetDuration == plan.targetDuration)
        #expect((playlist.mapURI != nil) == (plan.kind == .fmp4))
        for (i, entry) in playlist.segments.enumerated() where i < plan.spans.count {
            #expect(entry.uri == plan.segmentName(i))
            #expect(abs(entry.duration - plan.spans[i].duration) < 1e-3, "\(file) segment \(i)")
            let live = try #require(segmenter.segment(i))
            let vod = try plan.segment(i, from: source.file, sequence: i + 1)
            if plan.kind == .fmp4 {
                #expect(live.bytes == vod, "\(file) segment \(i): the VOD bytes")
            } else {
                // The same frames; the timestamp from the sample clock (truncated to the tick, as
                // radio's) where VOD rounds the index's seconds: at most a tick apart.
                let liveTag = try #require(try PackedAudioTag.parse(live.bytes[...]))
                let vodTag = try #require(try PackedAudioTag.parse(vod[...]))
                #expect(live.bytes[liveTag.size...] == vod[vodTag.size...], "\(file) segment \(i): the VOD frames")
                #expect(abs(Double(liveTag.timestamp ?? 0) - Double(vodTag.timestamp ?? 1 << 40)) <= 1, "\(file) segment \(i)")
            }
        }
        let started = Monotonic.now
        #expect(source.stop(deadline: monotonicNanos() + 1_000_000_000), "the thread ends when asked")
        #expect(started.elapsed < 0.5, "a stop wakes the sleeping thread: \(started.elapsed) s")
        #expect(source.running == nil)
    }

    @Test func aFileThatIsNotAudio_failsTheStart_withItsReason() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("notes.txt").path
        try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: path))
        let source = try HLSLiveSource(name: "x", path: path)
        source.start()
        #expect(throws: HLSLiveStartError.self) { try source.waitUntilPlaying() }
        #expect(source.stop(deadline: monotonicNanos() + 1_000_000_000))
        #expect(throws: (any Error).self) { try HLSLiveSource(name: "x", path: folder.appendingPathComponent("nope.mp3").path) }
        #expect(throws: HLSError.self) { try HLSLiveSource(name: "a/b", path: path) }
    }
}
