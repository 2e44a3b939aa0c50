import Foundation
import Testing
@testable import StreamServer
@testable import StreamShared

/// The waveforms kept on disk: read back whole, one version per track, the least recently
/// used removed past the bound, a damaged or foreign file removed instead of believed.
@Suite struct WaveformDiskCacheTests {
    static func pyramid(pairs: Int, seed: Int16) -> WaveformPyramid {
        var pyramid = WaveformPyramid(sampleRate: 44_100)
        for i in 0..<pairs {
            let value = Int16(truncatingIfNeeded: Int(seed) &* 31 &+ i % 1000)
            pyramid.append(low: min(value, -value), high: max(value, -value))
        }
        pyramid.finish(totalFrames: pairs * 256)
        return pyramid
    }

    static func folder() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("waveform-cache-\(UUID().uuidString)").path
    }

    @Test func stored_readsBack_andTheTracksOlderVersionGoes() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = WaveformDiskCache(directory: directory, maxBytes: 1 << 20)
        let first = Self.pyramid(pairs: 1000, seed: 1)
        #expect(cache.store(first, trackID: 7, identity: 0xA) == nil)
        #expect(cache.load(trackID: 7, identity: 0xA) == first, "read back whole")
        #expect(cache.load(trackID: 7, identity: 0xB) == nil, "another version is not this one")
        let second = Self.pyramid(pairs: 500, seed: 2)
        #expect(cache.store(second, trackID: 7, identity: 0xB) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [WaveformDiskCache.name(trackID: 7, identity: 0xB)],
                "one version per track")
        #expect(cache.store(WaveformPyramid(sampleRate: 8000), trackID: 8, identity: 1) != nil, "an unfinished pyramid is not kept")
    }

    @Test func pastTheBound_theLeastRecentlyUsedGo() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Each file is 32 + 4 · 1000 bytes: three fit, a fourth does not.
        let cache = WaveformDiskCache(directory: directory, maxBytes: 3 * 4032 + 100)
        for id in 1...3 {
            #expect(cache.store(Self.pyramid(pairs: 1000, seed: Int16(id)), trackID: id, identity: 1) == nil)
            // Modification times a second apart, so the order of use is unambiguous.
            let path = directory + "/" + WaveformDiskCache.name(trackID: id, identity: 1)
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: Double(id - 10))], ofItemAtPath: path)
        }
        #expect(cache.load(trackID: 1, identity: 1) != nil, "track 1 read: now the most recently used")
        #expect(cache.store(Self.pyramid(pairs: 1000, seed: 4), trackID: 4, identity: 1) == nil)
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: directory))
        #expect(left == Set([1, 3, 4].map { WaveformDiskCache.name(trackID: $0, identity: 1) }), "track 2 went: \(left)")
    }

    @Test func damagedOrForeignFiles_areRemoved() throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = WaveformDiskCache(directory: directory, maxBytes: 1 << 20)
        #expect(cache.store(Self.pyramid(pairs: 100, seed: 3), trackID: 5, identity: 9) == nil)
        let path = directory + "/" + WaveformDiskCache.name(trackID: 5, identity: 9)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count - 3).write(to: URL(fileURLWithPath: path))
        #expect(cache.load(trackID: 5, identity: 9) == nil && !FileManager.default.fileExists(atPath: path), "a truncated file")
        // A whole file that says another identity (a hash collision of names, a file copied in).
        #expect(cache.store(Self.pyramid(pairs: 100, seed: 3), trackID: 5, identity: 9) == nil)
        var foreign = try Data(contentsOf: URL(fileURLWithPath: path))
        foreign[12] ^= 1
        try foreign.write(to: URL(fileURLWithPath: path))
        #expect(cache.load(trackID: 5, identity: 9) == nil && !FileManager.default.fileExists(atPath: path), "another identity")
    }
}
