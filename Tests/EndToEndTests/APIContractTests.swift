import Foundation
import StreamShared
import Testing
import TestSupport

/// The real streamd's answers read through the shared API documents (what streamplay reads
/// them with), and written again by them to the very bytes streamd sent.
@Suite(.ownThreads) struct APIContractTests {
    @Test func tracksIndexAndStatus_decode_andReencodeToTheBytesSent() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library)

        let tracks = try PlaylistFileTests.get(server, "/api/tracks")
        let items = try TrackItem.decodeList(tracks.body)
        #expect(items.count == TestPaths.mediaFiles().count)
        #expect(Array(("[" + items.map { $0.encoded() }.joined(separator: ",\n") + "]\n").utf8) == tracks.body)
        for item in items { #expect(item.url == APIRoutes.mediaPath(forLibraryPath: item.path)) }

        let track = try #require(items.first { $0.path.hasSuffix(".mp3") })
        let mediaURL = "http://127.0.0.1:\(server.port)" + track.url
        for around in [nil, 1.0] {
            let indexURL = try #require(APIRoutes.seekIndexURL(forMediaURL: mediaURL, around: around))
            let answer = try PlaylistFileTests.get(server, String(indexURL.dropFirst("http://127.0.0.1:\(server.port)".count)))
            #expect(answer.status == 200, "\(indexURL)")
            let index = try SeekIndexDocument.decode(answer.body)
            #expect(index.path == track.path && index.etag == track.etag && index.sampleRate == track.sampleRate)
            #expect(!index.points.isEmpty && index.points.allSatisfy { $0.byte >= index.firstFrameOffset && $0.byte < index.audioEndOffset })
            #expect(Array(index.encoded().utf8) == answer.body)
        }

        let answer = try PlaylistFileTests.get(server, APIRoutes.status)
        let status = try StatusDocument.decode(answer.body)
        #expect(status.tracks == items.count && status.watcher != nil && status.connections != nil)
        #expect(Array(status.encoded().utf8) == answer.body)
    }
}
