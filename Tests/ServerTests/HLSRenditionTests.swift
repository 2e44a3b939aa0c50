import Testing
@testable import StreamHLS
import StreamShared

/// The ladder's names and options, and the grid cut on bytes a test makes (no server).
@Suite struct HLSRenditionTests {
    @Test func folderNames() {
        #expect(HLSRendition(folder: "opus-128") == HLSRendition(codec: .opus, kbps: 128))
        #expect(HLSRendition(folder: "mp3-64") == HLSRendition(codec: .mp3, kbps: 64))
        for bad in ["opus-", "opus-064", "opus-1280", "ogg-64", "opus-+64", "opus64", "-64", "mp3-6x"] {
            #expect(HLSRendition(folder: Substring(bad)) == nil, "\(bad)")
        }
        #expect(HLSRendition(codec: .opus, kbps: 96).folder == "opus-96")
        #expect(HLSRendition.opusLead == 793)
    }

    @Test func ladderOption() {
        #expect(HLSLadder.parse("64,128,192") == [64, 128, 192])
        #expect(HLSLadder.parse("128,64,128") == [128, 64])
        #expect(HLSLadder.parse("none") == [] && HLSLadder.parse("") == [])
        for bad in ["16", "321", "64,", "a", "64;128", "-64"] { #expect(HLSLadder.parse(bad) == nil, "\(bad)") }
    }

    /// Silent MP3 frames at 48 kHz (MP3Silence-shaped: header + zero side info) cut every 250.
    @Test func mp3CutsEvery250Frames() throws {
        // MPEG-1 layer III, 128 kbit/s, 48 kHz, joint stereo: 384-byte frames.
        let frame: [UInt8] = [0xFF, 0xFB, 0x94, 0x40] + [UInt8](repeating: 0, count: 380)
        let bytes = (0..<600).flatMap { _ in frame }
        let cuts = try RenditionGrid.mp3Cuts(MemoryBytes(bytes))
        #expect(cuts.spans.map(\.start) == [0, 250 * 384, 500 * 384])
        #expect(cuts.spans.map(\.duration) == [6, 6, 100 * 1152 / 48_000.0])
        #expect(cuts.audioEnd == bytes.count)
    }

    @Test func garbageIsATypedError() {
        #expect(throws: (any Error).self) { try RenditionGrid.mp3Cuts(MemoryBytes([UInt8](repeating: 0x55, count: 5000))) }
        #expect(throws: (any Error).self) { try RenditionGrid.opusCuts(MemoryBytes(Array("OggS".utf8) + [UInt8](repeating: 0, count: 100))) }
    }
}
