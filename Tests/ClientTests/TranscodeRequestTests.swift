import Testing
@testable import StreamClient

/// The URL `--format` asks streamd for: the query appended (after an existing one, before a
/// fragment), the offset as a plain decimal, and anything but an http(s) /media/ URL refused.
@Suite struct TranscodeRequestTests {
    @Test func url_appendsTheQuery() throws {
        let opus = TranscodeRequest(format: .opus, bitrateKbps: 96)
        #expect(try opus.url(for: "http://h:1/media/a%20b.flac") == "http://h:1/media/a%20b.flac?format=opus&bitrate=96")
        #expect(try opus.url(for: "https://h/media/a.flac?kbps=64", offsetSeconds: 1)
                == "https://h/media/a.flac?kbps=64&format=opus&bitrate=96&offset=1")
        #expect(try TranscodeRequest(format: .mp3).url(for: "http://h/media/x.wav#t", offsetSeconds: 2.5)
                == "http://h/media/x.wav?format=mp3&offset=2.5#t")
        #expect(TranscodeRequest.seconds(0.000001) == "0.000001" && TranscodeRequest.seconds(90.25) == "90.25")
        #expect(TranscodeRequest(format: .mp3).effectiveBitrate == 192 && opus.effectiveBitrate == 96)
        #expect(TranscodeRequest.isTranscode("http://h/media/a.flac?format=mp3&bitrate=128"))
        #expect(!TranscodeRequest.isTranscode("http://h/media/a.flac?format=raw") && !TranscodeRequest.isTranscode("http://h/media/a.flac#?format=mp3"))
    }

    @Test func url_refusesWhatIsNotAStreamdTrack() {
        let opus = TranscodeRequest(format: .opus)
        for source in ["/music/a.flac", "a.flac", "ftp://h/media/a.flac", "http://h/files/a.flac", "http://h/media/",
                       "http://h/media/a.flac?format=mp3", "http://h/media/a.flac?offset=3"] {
            #expect(throws: TranscodeRequest.Refusal.self, "\(source)") { try opus.url(for: source) }
        }
    }
}
