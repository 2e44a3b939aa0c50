import Foundation
import Testing
import StreamShared
@testable import StreamSubsonic

/// getTranscodeDecision's parts that need no server: the ClientInfo reader (its bounds and the
/// spec's example) and the decision for each kind of client; the grants' binding.
@Suite struct SubsonicTranscodeDecisionTests {
    static let flac = SubsonicStreamDetails(container: "flac", codec: "flac", channels: 2, bitrate: 900_000, sampleRate: 44_100, bitDepth: 16)

    static func client(_ json: String) throws(SubsonicError) -> SubsonicClientInfo { try SubsonicClientInfo(json: Array(json.utf8)) }

    /// The ClientInfo of the spec's page (bitrates in bit/s), and its first draft's spellings.
    @Test func clientInfo_readsTheSpecsExampleAndTheDraftForm() throws {
        let info = try Self.client("""
        {"name":"Play:1","platform":"Sonos","maxAudioBitrate":512000,"maxTranscodingAudioBitrate":256000,
         "directPlayProfiles":[{"containers":["mp3"],"audioCodecs":["mp3"],"protocols":["http"],"maxAudioChannels":2},
                               {"containers":["flac"],"audioCodecs":["flac"],"protocols":[],"maxAudioChannels":2}],
         "transcodingProfiles":[{"container":"mp3","audioCodec":"mp3","protocol":"http","maxAudioChannels":2}],
         "codecProfiles":[{"type":"AudioCodec","name":"flac","limitations":[
            {"name":"audioSamplerate","comparison":"LessThanEqual","values":["192000"],"required":false},
            {"name":"audioChannels","comparison":"Equals","values":["1","2"],"required":false}]}]}
        """)
        #expect(info.name == "Play:1" && info.maxAudioBitrate == 512_000 && info.maxTranscodingAudioBitrate == 256_000)
        #expect(info.directPlay.count == 2 && info.directPlay[1].containers == ["flac"] && info.transcoding.first?.audioCodec == "mp3")
        #expect(info.codecProfiles.first?.limitations.count == 2)
        let draft = try Self.client("""
        {"name":"x","platform":"y","directPlayProfiles":[{"container":"mp4","audioCodec":"flac,aac,alac","protocol":"*"}],
         "codecProfiles":[{"type":"AudioCodec","name":"mp3","limitations":[{"name":"audioBitrate","comparison":"LessThanEqual","value":"320000","required":true}]}]}
        """)
        #expect(draft.directPlay.first?.audioCodecs == ["flac", "aac", "alac"] && draft.directPlay.first?.protocols == [])
        #expect(draft.codecProfiles.first?.limitations.first?.values == ["320000"])
    }

    @Test func clientInfo_refusesWhatIsNotOneWithError10() {
        let bodies = ["", "{", "[]", "{\"name\":1}", "{\"directPlayProfiles\":{}}", "{\"maxAudioBitrate\":-5}",
                      "{\"maxAudioBitrate\":1.5}", "{\"directPlayProfiles\":[1]}", String(repeating: "[", count: 100),
                      "{\"directPlayProfiles\":[" + Array(repeating: "{}", count: 65).joined(separator: ",") + "]}",
                      "{\"name\":\"" + String(repeating: "a", count: 70_000) + "\"}"]
        for body in bodies {
            #expect(throws: SubsonicError.self, "\(body.prefix(60))") { try Self.client(body) }
            do { _ = try Self.client(body) } catch { #expect(error.code == 10) }
        }
    }

    @Test func decision_directPlayWhenAProfileFits() throws {
        let info = try Self.client("""
        {"name":"a","platform":"b","directPlayProfiles":[{"containers":["mp3"],"audioCodecs":[],"protocols":[]},
         {"containers":["flac"],"audioCodecs":["flac"],"protocols":["http"],"maxAudioChannels":2}]}
        """)
        let decision = SubsonicTranscodeDecision(source: Self.flac, client: info)
        #expect(decision.canDirectPlay && decision.reasons.isEmpty && decision.transcode == nil)
        // Over the client's overall limit, or with a required limitation unmet: not any more.
        var capped = info
        capped.maxAudioBitrate = 320_000
        #expect(SubsonicTranscodeDecision(source: Self.flac, client: capped).reasons == ["ContainerNotSupported", "AudioBitrateNotSupported"])
        var limited = info
        limited.codecProfiles = [.init(name: "flac", limitations: [.init(name: "audioSamplerate", comparison: "LessThanEqual", values: ["32000"], required: true)])]
        #expect(SubsonicTranscodeDecision(source: Self.flac, client: limited).reasons == ["ContainerNotSupported", "AudioSampleRateNotSupported"])
        limited.codecProfiles[0].limitations[0].required = false
        #expect(SubsonicTranscodeDecision(source: Self.flac, client: limited).canDirectPlay)
    }

    @Test func decision_transcodeHonoursOrderAndLimits() throws {
        // MP3 only, capped at 128 kbit/s: MP3 at 128 at the source's rate.
        let mp3 = try Self.client("""
        {"name":"a","platform":"b","maxAudioBitrate":128000,"directPlayProfiles":[{"containers":["mp3"],"audioCodecs":["mp3"],"protocols":[]}],
         "transcodingProfiles":[{"container":"mp3","audioCodec":"mp3","protocol":"http"}]}
        """)
        let toMP3 = SubsonicTranscodeDecision(source: Self.flac, client: mp3)
        #expect(!toMP3.canDirectPlay && toMP3.transcode?.format == "mp3" && toMP3.transcode?.kbps == 128)
        #expect(toMP3.transcode?.stream == SubsonicStreamDetails(container: "mp3", codec: "mp3", channels: 2, bitrate: 128_000, sampleRate: 44_100))
        // HLS, AAC and FLAC are passed over; Opus taken at the transcoding limit, a codec ceiling lowering it.
        let opus = try Self.client("""
        {"name":"a","platform":"b","maxTranscodingAudioBitrate":256000,
         "transcodingProfiles":[{"container":"mp4","audioCodec":"aac","protocol":"hls"},{"container":"aac","audioCodec":"aac","protocol":"http"},
                                {"container":"flac","audioCodec":"flac","protocol":"http"},{"container":"ogg","audioCodec":"opus","protocol":"http"},
                                {"container":"mp3","audioCodec":"mp3","protocol":"http"}],
         "codecProfiles":[{"type":"AudioCodec","name":"opus","limitations":[{"name":"audioBitrate","comparison":"LessThanEqual","values":["160000"],"required":true}]}]}
        """)
        let toOpus = SubsonicTranscodeDecision(source: Self.flac, client: opus)
        #expect(toOpus.reasons == ["NoDirectPlayProfile"] && toOpus.transcode?.format == "opus" && toOpus.transcode?.kbps == 160)
        #expect(toOpus.transcode?.stream.sampleRate == 48_000 && toOpus.transcode?.stream.container == "ogg")
        // Mono only: streamd does not down-mix, so nothing fits; the reason says why.
        let mono = try Self.client("""
        {"name":"a","platform":"b","transcodingProfiles":[{"container":"mp3","audioCodec":"mp3","protocol":"http","maxAudioChannels":1}]}
        """)
        let none = SubsonicTranscodeDecision(source: Self.flac, client: mono)
        #expect(!none.canDirectPlay && none.transcode == nil && none.errorReason.contains("channel"))
    }

    @Test func grants_areRandomAndBoundToWhatTheyName() {
        var grants = TranscodeGrants()
        let grant = TranscodeGrant(userID: 3, userName: "alice", sid: "tr-1", original: false, transcode: nil, expires: 1_000)
        let first = grants.add(grant), second = grants.add(grant)
        #expect(first != second && first.hasPrefix("st1") && first.count == 35)
        #expect(grants.grant(first, now: 999) == grant && grants.grant(first, now: 1_001) == nil && grants.grant("st1" + String(repeating: "0", count: 32), now: 0) == nil)
    }
}
