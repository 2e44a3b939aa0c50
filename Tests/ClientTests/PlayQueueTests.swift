import Foundation
import Testing
@testable import StreamClient

/// The order of a queue and the way through it: shuffle, seed, loop, start track, n and p.
@Suite struct PlayQueueTests {
    @Test func inOrder_endsAfterTheLast() {
        var q = PlayQueue(count: 3)
        #expect(q.current == 0)
        #expect(q.advanceAfterEnd() == 1)
        #expect(q.number == 2)
        #expect(q.advanceAfterEnd() == 2)
        #expect(q.advanceAfterEnd() == nil)
    }

    @Test func startTrack_isOneBased_andClamped() {
        #expect(PlayQueue(count: 5, startTrack: 3).current == 2)
        #expect(PlayQueue(count: 5, startTrack: 99).current == 4)
        #expect(PlayQueue(count: 5, startTrack: -2).current == 0)
        #expect(PlayQueue(count: 0).current == nil)
    }

    @Test func loopTrack_repeats_untilSkipped() {
        var q = PlayQueue(count: 3, loop: .track)
        #expect(q.advanceAfterEnd() == 0)
        #expect(q.advanceAfterEnd() == 0)
        #expect(q.skipForward() == 1)
        #expect(q.skipForward() == 2)
        #expect(q.skipForward() == 0, "n on the last track wraps while looping")
    }

    @Test func loopAll_startsAgain() {
        var q = PlayQueue(count: 2, loop: .all)
        #expect(q.advanceAfterEnd() == 1)
        #expect(q.advanceAfterEnd() == 0)
        #expect(q.back(elapsed: 0) == 1, "p on the first goes to the last under --loop all")
    }

    @Test func previous_restartsAfterThreeSeconds_elseGoesBack() {
        var q = PlayQueue(count: 3, startTrack: 2)
        #expect(q.back(elapsed: 3.5) == 1)
        #expect(q.back(elapsed: 1) == 0)
        #expect(q.back(elapsed: 1) == 0, "the first track restarts")
    }

    @Test func shuffle_withSeed_isRepeatable_andAPermutation() {
        let a = PlayQueue(count: 50, shuffle: true, seed: 42)
        let b = PlayQueue(count: 50, shuffle: true, seed: 42)
        let c = PlayQueue(count: 50, shuffle: true, seed: 43)
        #expect(a.order == b.order)
        #expect(a.order != c.order)
        #expect(a.order.sorted() == Array(0..<50))
        #expect(a.order != Array(0..<50))
    }

    @Test func shuffle_startTrack_playsFirst() {
        let q = PlayQueue(count: 10, shuffle: true, seed: 7, startTrack: 6)
        #expect(q.order.first == 5)
        #expect(q.current == 5)
        #expect(q.order.sorted() == Array(0..<10))
    }

    @Test func shuffle_isUnbiasedEnough() {
        // Track 1 starts; over 3,000 seeds each of the other two comes second about half the time.
        var firsts = [0, 0, 0]
        for seed in 0..<3000 { firsts[PlayQueue(count: 3, shuffle: true, seed: UInt64(seed), startTrack: 1).order[1]] += 1 }
        #expect(firsts[0] == 0)
        #expect(abs(firsts[1] - 1500) < 150 && abs(firsts[2] - 1500) < 150, "\(firsts)")
    }

    @Test func directory_expandsToItsAudioFiles_inPathOrder() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-queue-\(getpid())-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        let fm = FileManager.default
        for dir in ["b", "a/cd2", ".hidden", "empty"] {
            try fm.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true)
        }
        for file in ["b/02.mp3", "b/01.M4A", "a/cd2/1.wav", "a/10.aac", "a/notes.txt", ".hidden/x.mp3", "cover.jpg", "z.mp3"] {
            try Data([0]).write(to: root.appendingPathComponent(file))
        }
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("a/loop").path, withDestinationPath: root.path)
        let expansion = QueueSources.expand([root.path + "/", "http://h/x.mp3", root.appendingPathComponent("empty").path])
        let base = root.path
        #expect(expansion.tracks == ["\(base)/a/10.aac", "\(base)/a/cd2/1.wav", "\(base)/b/01.M4A", "\(base)/b/02.mp3",
                                     "\(base)/z.mp3", "http://h/x.mp3"])
        #expect(expansion.warnings == ["queue: \(root.appendingPathComponent("empty").path): no audio files"])
    }
}
