import Testing
@testable import StreamShared

/// The sample cursor gives the same offsets and sizes as `sampleLocation`, in one pass.
@Suite struct MP4SampleCursorTests {
    static func walk(_ track: MP4AudioTrack, from offset: Int = 0) -> [[Int]] {
        var cursor = MP4SampleCursor(track: track, atOrAfter: offset)
        var result: [[Int]] = []
        while let location = cursor.next(), result.count < 10_000 { result.append([location.offset, location.size]) }
        return result
    }

    @Test(arguments: [[5, 5], [2, 4, 4, 3, 3, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [17]])
    func cursor_matchesSampleLocation(chunks: [Int]) throws {
        var fixture = MP4Fixture()
        fixture.chunkSamples = chunks
        fixture.sizes = (0..<chunks.reduce(0, +)).map { 200 + 3 * $0 }
        let track = try #require(try MP4Movie.parse(moov: fixture.moov()[...]).audio)
        let expected = fixture.expectedLocations.map { [$0.offset, $0.size] }
        #expect(Self.walk(track) == expected)
        // Starting at each sample's offset (and one byte before it) gives the rest from there.
        for (n, location) in expected.enumerated() {
            #expect(Self.walk(track, from: location[0]) == Array(expected[n...]), "from sample \(n)")
            #expect(Self.walk(track, from: location[0] - 1) == Array(expected[n...]), "from before sample \(n)")
        }
        #expect(Self.walk(track, from: Int.max).isEmpty)
    }

    @Test func emptyChunkRuns_arePassedOver() throws {
        // stsc: chunk 1 holds 2 samples, chunks 2-3 hold none, chunk 4 on holds 3.
        var track = MP4AudioTrack(sampleCount: 5, sampleSizes: .constant(10),
                                  sampleToChunk: [.init(firstChunk: 1, samplesPerChunk: 2), .init(firstChunk: 2, samplesPerChunk: 0),
                                                  .init(firstChunk: 4, samplesPerChunk: 3)],
                                  chunkOffsets: [100, 200, 300, 400])
        #expect(Self.walk(track) == [[100, 10], [110, 10], [400, 10], [410, 10], [420, 10]])
        #expect(Self.walk(track, from: 150) == [[400, 10], [410, 10], [420, 10]])
        // Tables that end early stop the walk instead of inventing samples.
        track.chunkOffsets = [100]
        #expect(Self.walk(track) == [[100, 10], [110, 10]])
        track.sampleToChunk = []
        #expect(Self.walk(track).isEmpty)
    }

    @Test func lyingSampleCount_stopsWhereTheSizesEnd() {
        let track = MP4AudioTrack(sampleCount: 1_000_000_000, sampleSizes: .table([4, 5]),
                                  sampleToChunk: [.init(firstChunk: 1, samplesPerChunk: 1_000_000_000)], chunkOffsets: [0])
        #expect(Self.walk(track) == [[0, 4], [4, 5]])
    }
}
