import Foundation
import Testing
import StreamShared
@testable import StreamSubsonic

/// The parts of cover resizing that need no worker: the worker's wire (request and answer, and
/// garbage refused with a typed error) and the disk cache (keyed files, a torn or foreign file is
/// a miss, the folder trimmed to its bound).
@Suite struct SubsonicCoverPartsTests {
    static func payload(_ frame: [UInt8]) -> [UInt8] { Array(frame.dropFirst(4)) }

    @Test func wire_roundTripsAndRefusesGarbage() throws {
        let request = try CoverWorker.parseRequest(Self.payload(CoverWorker.request([1, 2, 3], size: 300)))
        #expect(request.size == 300 && Array(request.image) == [1, 2, 3])
        #expect(throws: FormatError.self) { try CoverWorker.parseRequest(Self.payload(CoverWorker.request([1], size: 0))) }
        #expect(throws: FormatError.self) { try CoverWorker.parseRequest([1, 0]) }
        let thumbnail = CoverWorker.Answer.thumbnail(jpeg: [0xFF, 0xD8, 9], width: 300, height: 225)
        #expect(try CoverWorker.parseAnswer(Self.payload(CoverWorker.answer(thumbnail))) == thumbnail)
        #expect(try CoverWorker.parseAnswer(Self.payload(CoverWorker.answer(.refused("bad")))) == .refused("bad"))
        #expect(throws: FormatError.self) { try CoverWorker.parseAnswer([0x7F, 1, 2]) }
        #expect(throws: FormatError.self) { try CoverWorker.parseAnswer([0, 0, 0, 0, 0, 1, 0, 0, 0]) }   // 0 x 1, no JPEG
        #expect(throws: FormatError.self) { try CoverWorker.parseAnswer([]) }
    }

    @Test func diskCache_keyedBoundedAndChecked() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-covers-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let cache = SubsonicCoverDiskCache(directory: folder, maxBytes: 3000)
        let first = [UInt8](repeating: 1, count: 1000), second = [UInt8](repeating: 2, count: 1000)
        #expect(cache.store(first, key: "a/300") == nil)
        #expect(cache.load(key: "a/300") == first)
        #expect(cache.load(key: "a/64") == nil)
        // A file whose key line is not the key asked for (a collision, another version) is a miss and goes.
        let path = folder + "/" + SubsonicCoverDiskCache.name(key: "b/300")
        try Data(Array("other/300\n".utf8) + second).write(to: URL(fileURLWithPath: path))
        #expect(cache.load(key: "b/300") == nil)
        #expect(!FileManager.default.fileExists(atPath: path))
        // Bounded: the least recently used go first (file times move in clock ticks: 20 ms apart).
        usleep(20_000)
        #expect(cache.store(second, key: "b/300") == nil)
        usleep(20_000)
        #expect(cache.load(key: "a/300") == first)   // renews a/300
        usleep(20_000)
        #expect(cache.store(second, key: "c/300") == nil)
        #expect(cache.load(key: "a/300") == first)
        #expect(cache.load(key: "c/300") == second)
        #expect(cache.load(key: "b/300") == nil, "the least recently used went")
    }
}
