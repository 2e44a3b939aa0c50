import Foundation
import Testing
@testable import StreamClient
@testable import StreamShared

@Suite struct LocalFileTests {
    static func temporaryFile(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func readsRangesAndStopsAtTheEnd() throws {
        let path = try Self.temporaryFile(Array(0..<200).map { UInt8($0) })
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try LocalFile(path: path)
        #expect(file.size == 200)
        #expect(try file.read(at: 10, count: 3) == [10, 11, 12])
        #expect(try file.read(at: 198, count: 10) == [198, 199])
        #expect(try file.read(at: 500, count: 10) == [])
        #expect(try file.read(at: -1, count: 10) == [])
    }

    @Test func missingFile_throwsWithErrno() {
        #expect(throws: FileError.self) { try LocalFile(path: "/nonexistent/track.mp3") }
        do { _ = try LocalFile(path: "/nonexistent/track.mp3") } catch {
            #expect("\(error)".hasPrefix("source: open /nonexistent/track.mp3: No such file"), "\(error)")
        }
    }

    @Test func directory_isRefused() {
        #expect(throws: FileError.self) { try LocalFile(path: "/tmp") }
    }
}

@Suite struct TrackInfoTests {
    @Test func jsonFieldsInContractOrder() throws {
        let frames = MPEGFrames.cbr(count: 50)
        let path = try LocalFileTests.temporaryFile(frames)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let json = TrackInfo.json(try TrackInfo.analyze(path: path))
        let keys = ["container", "codec", "sample_rate", "channels", "duration_s", "bitrate", "frames",
                    "first_frame_offset", "encoder_delay", "encoder_padding", "title", "artist", "album"]
        var last = json.startIndex
        for key in keys {
            let range = try #require(json.range(of: "\"\(key)\":"), "\(key) missing from \(json)")
            #expect(range.lowerBound >= last, "\(key) out of order")
            last = range.lowerBound
        }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["frames"] as? Int == 50)
        #expect(object["container"] as? String == "mp3")
    }
}

/// CBR MPEG-1 layer III frames (128 kbit/s, 44.1 kHz) with silent bodies.
enum MPEGFrames {
    static func cbr(count: Int) -> [UInt8] {
        (0..<count).flatMap { _ in [0xFF, 0xFB, 0x90, 0x00] + [UInt8](repeating: 0, count: 413) }
    }
}
