import Testing
@testable import StreamLibrary
@testable import StreamRadio
@testable import StreamServer
import StreamShared
import StreamHTTP

/// The one `Track` model: what the scanner makes of an analysis is what the store gives back,
/// and the playlist line, API item and channel track are read from it.
@Suite struct TrackModelTests {
    typealias Fixture = LibraryStoreTests

    @Test func trackFromAnAnalysis_isWhatTheStoreGivesBack_withItsIDs() throws {
        let analysis = Fixture.analysis(title: "Early", artist: "Band", album: "Second", albumArtist: "Band",
                                        track: "1/9", disc: "2/2", date: "2011-05-01", cover: 500)
        let made = Track(path: "Band/Second/2-01 Early.mp3", stamp: Fixture.stamp(7), analysis: analysis)
        #expect(made.trackNumber == 1 && made.trackTotal == 9 && made.discNumber == 2 && made.discTotal == 2 && made.year == 2011)
        #expect(made.replayGain == ReplayGain(trackGain: -6.5, trackPeak: 0.9) && made.coverArtBytes == 500)
        #expect(made.id == 0 && made.artistID == nil && made.albumID == nil, "ids are the store's to give")

        let store = try LibraryStore(path: ":memory:", folder: "/music")
        try store.apply([.track(made)])
        let read = try #require(try store.tracks.track(path: made.path))
        #expect(read.id > 0 && read.artistID != nil && read.albumID != nil)
        var expected = made
        expected.id = read.id
        expected.artistID = read.artistID
        expected.albumID = read.albumID
        #expect(read == expected)
        #expect(try store.tracks.track(id: read.id) == read)
        // The API item is the stored one, byte for byte.
        let json = try TrackJSON.array(items: .max) { each throws(SQLiteError) in try store.tracks.forEachJSON(ids: [read.id], each) }
        #expect(String(decoding: json.bytes, as: UTF8.self) == "[" + read.item.encoded() + "]\n")
    }

    @Test func aDurationThatIsNotFinite_isStoredAsZero() {
        let track = Track(path: "x.mp3", stamp: Fixture.stamp(1), analysis: Fixture.analysis(title: nil, duration: .nan))
        #expect(track.durationSeconds == 0 && track.displayTitle == "x" && track.derived == [.title])
    }

    @Test func label_isArtistDashTitle_elseTheTitle_elseTheFileName() {
        var track = Track(path: "A/b/03 Song.mp3", stamp: Fixture.stamp(1), analysis: Fixture.analysis(title: "Song", artist: "Band"))
        #expect(track.label == "Band - Song")
        track.artist = ""
        #expect(track.label == "Song")
        track.title = nil
        track.artist = nil
        #expect(track.label == "03 Song.mp3" && Track.fileName(track.path) == "03 Song.mp3")
    }

    @Test func channelTrack_readsItsFactsFromTheTrack() {
        var track = Track(path: "A/b/03 Song.mp3", stamp: Fixture.stamp(1), analysis: Fixture.analysis(title: "Song", artist: "Band"))
        track.firstFrameOffset = 417
        let channel = ChannelTrack(track: track, path: "/music/A/b/03 Song.mp3")
        #expect(channel.title == "Band - Song" && channel.codec == .mpeg && channel.kbps == 128)
        #expect(channel.audioStart == 417 && channel.audioEnd == track.stamp.size, "no trailing-tag offset is kept: the file's end")
        #expect(channel.decoderHints.encoderDelay == 576 && channel.decoderHints.totalSamples == 441_216)
        track.title = nil
        track.container = Container.mp4.rawValue
        let untitled = ChannelTrack(track: track, path: "/music/A/b/03 Song.mp3")
        #expect(untitled.title == "03 Song" && untitled.codec == nil)
    }
}
