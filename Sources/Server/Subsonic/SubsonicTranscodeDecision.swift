import StreamShared
import StreamLibrary

/// getTranscodeDecision's body as the Subsonic API reads it: StreamShared's reader, its refusals
/// error 10 (a bad parameter) saying why.
typealias SubsonicClientInfo = OpenSubsonicClientInfo

extension OpenSubsonicClientInfo {
    init(json bytes: [UInt8]) throws(SubsonicError) {
        do {
            try self.init(reading: bytes)
        } catch {
            throw .invalid("body", error.why)
        }
    }
}

/// A stream's description in a decision (OpenSubsonic's `StreamDetails`).
struct SubsonicStreamDetails: Sendable, Equatable {
    var container: String
    var codec: String
    var channels: Int
    /// bit/s; 0 when unknown.
    var bitrate: Int
    var sampleRate: Int
    /// Lossless and PCM sources only.
    var bitDepth: Int?

    var element: SubsonicElement {
        var e = SubsonicElement([("protocol", .string("http")), ("container", .string(container)), ("codec", .string(codec)),
                                 ("audioChannels", .int(channels)), ("audioBitrate", .int(bitrate)),
                                 ("audioSamplerate", .int(sampleRate))])
        if let bitDepth { e.set("audioBitdepth", .int(bitDepth)) }
        return e
    }

    var isLossless: Bool { ["flac", "alac", "pcm", "wavpack", "ape"].contains(codec) }
}

// In an extension, so Swift still gives the struct its memberwise initializer.
extension SubsonicStreamDetails {
    /// The file as the catalog describes it, with the names clients use (`aac` for ADTS, `pcm`
    /// for any PCM).
    init(track: Track) {
        container = track.container == Container.adts.rawValue ? "aac" : track.container
        codec = track.codec.hasPrefix("pcm") ? "pcm" : track.codec.lowercased()
        channels = track.channels
        bitrate = track.bitrate
        sampleRate = track.sampleRate
        bitDepth = track.bitsPerSample
    }
}

/// What getTranscodeDecision decides for one song and one client: the original when a direct
/// play profile takes it, else the first of the client's transcoding profiles that streamd's
/// transcoder makes (MP3 or Opus over HTTP), at the best bitrate the client's limits allow.
struct SubsonicTranscodeDecision: Sendable, Equatable {
    /// A transcode streamd makes: `/media/`'s `format` and `bitrate`.
    struct Transcode: Sendable, Equatable {
        var format: String
        var kbps: Int
        var stream: SubsonicStreamDetails
    }

    var source: SubsonicStreamDetails
    var canDirectPlay: Bool
    /// Why each direct play profile did not take the file (one per profile; one when there are none).
    var reasons: [String] = []
    /// The transcode to send: when direct play is refused, or (when it is allowed) for a stream
    /// asked with an offset, which only a transcode can start at.
    var transcode: Transcode?
    /// Why nothing fits, when nothing does.
    var errorReason = ""

    /// Containers and codecs known by several names; each name maps to the group's first.
    static let containerAliases: [[String]] = [["aac", "adts", "m4a", "mp4", "m4b", "m4p"], ["mp3", "mpeg", "mp2"],
                                               ["ogg", "oga", "opus"], ["aiff", "aif", "aifc"], ["wav", "wave"], ["flac"]]
    static let codecAliases: [[String]] = [["aac", "adts", "mp4a"], ["mp3", "mpeg", "mp3float"], ["pcm", "wav", "lpcm"],
                                           ["opus"], ["vorbis"], ["flac"], ["alac"], ["mp2"], ["mp1"]]

    static func canonical(_ name: String, in groups: [[String]]) -> String {
        let name = name.hasPrefix("pcm") ? "pcm" : name
        return groups.first { $0.contains(name) }?.first ?? name
    }

    static func matches(_ names: [String], _ value: String, in groups: [[String]]) -> Bool {
        names.isEmpty || names.contains { canonical($0, in: groups) == canonical(value, in: groups) }
    }

    /// The transcoder's formats: their default and allowed bitrates (kbit/s, as `stream`'s).
    static let formats = SubsonicStreamChoice.formats

    init(source: SubsonicStreamDetails, client: SubsonicClientInfo) {
        self.source = source
        canDirectPlay = false
        if client.directPlay.isEmpty { reasons.append("NoDirectPlayProfile") }
        for profile in client.directPlay {
            if let reason = Self.directPlayRefusal(profile, source: source, client: client) {
                reasons.append(reason)
            } else {
                canDirectPlay = true
            }
        }
        if canDirectPlay { reasons = [] }
        var refusals: [String] = []
        for profile in client.transcoding {
            switch Self.transcode(profile, source: source, client: client) {
            case .success(let made):
                transcode = made
            case .failure(let why):
                refusals.append(why.why)
                continue
            }
            break
        }
        if !canDirectPlay, transcode == nil {
            errorReason = client.transcoding.isEmpty ? "no direct play profile takes the file and the client lists no transcoding profile"
                : "no direct play profile takes the file and no transcoding profile is one streamd makes: " + refusals.joined(separator: "; ")
        }
    }

    /// Why `profile` cannot play the source as it is; nil when it can.
    static func directPlayRefusal(_ profile: SubsonicClientInfo.DirectPlayProfile, source: SubsonicStreamDetails,
                                  client: SubsonicClientInfo) -> String? {
        if !profile.protocols.isEmpty && !profile.protocols.contains("http") { return "ProtocolNotSupported" }
        if !matches(profile.containers, source.container, in: containerAliases) { return "ContainerNotSupported" }
        if !matches(profile.audioCodecs, source.codec, in: codecAliases) { return "AudioCodecNotSupported" }
        if profile.maxAudioChannels > 0 && source.channels > profile.maxAudioChannels { return "AudioChannelsNotSupported" }
        if client.maxAudioBitrate > 0 && source.bitrate > client.maxAudioBitrate { return "AudioBitrateNotSupported" }
        for limitation in limitations(for: source.codec, client) where limitation.required {
            if !holds(limitation, for: source) { return limitationReason(limitation.name) }
        }
        return nil
    }

    /// The client's limitations for `codec` (codec profiles naming it by any alias).
    static func limitations(for codec: String, _ client: SubsonicClientInfo) -> [SubsonicClientInfo.Limitation] {
        client.codecProfiles.filter { canonical($0.name, in: codecAliases) == canonical(codec, in: codecAliases) }.flatMap(\.limitations)
    }

    static func limitationReason(_ name: String) -> String {
        switch name {
        case "audioChannels": return "AudioChannelsNotSupported"
        case "audioBitrate": return "AudioBitrateNotSupported"
        case "audioSamplerate": return "AudioSampleRateNotSupported"
        case "audioBitdepth": return "AudioBitDepthNotSupported"
        case "audioProfile": return "AudioProfileNotSupported"
        default: return "LimitationNotMet"
        }
    }

    /// Whether `stream` meets `limitation`. A limitation on a property the stream does not have
    /// (bit depth of a lossy stream), or one streamd cannot read, holds.
    static func holds(_ limitation: SubsonicClientInfo.Limitation, for stream: SubsonicStreamDetails) -> Bool {
        let value: Int?
        switch limitation.name {
        case "audioChannels": value = stream.channels
        case "audioBitrate": value = stream.bitrate > 0 ? stream.bitrate : nil
        case "audioSamplerate": value = stream.sampleRate
        case "audioBitdepth": value = stream.bitDepth
        default: value = nil
        }
        guard let value else { return true }
        let numbers = limitation.values.compactMap { Int($0) }
        switch limitation.comparison {
        case "Equals": return numbers.isEmpty || numbers.contains(value)
        case "NotEquals": return !numbers.contains(value)
        case "LessThanEqual": return numbers.first.map { value <= $0 } ?? true
        case "GreaterThanEqual": return numbers.first.map { value >= $0 } ?? true
        default: return true
        }
    }

    /// The transcode `profile` asks for, when streamd's transcoder makes it; else why not.
    static func transcode(_ profile: SubsonicClientInfo.TranscodingProfile, source: SubsonicStreamDetails,
                          client: SubsonicClientInfo) -> Result<Transcode, TranscodeRefusal> {
        let wire = profile.protocol
        guard wire.isEmpty || wire == "http" else { return .failure(.init("\(wire) (only http is served here)")) }
        let codec = canonical(profile.audioCodec.isEmpty ? profile.container : profile.audioCodec, in: codecAliases)
        let container = profile.container.isEmpty ? "" : canonical(profile.container, in: containerAliases)
        let format: String, outContainer: String, rate: Int
        switch codec {
        case "mp3" where container.isEmpty || container == "mp3":
            format = "mp3"; outContainer = "mp3"
            rate = LAMERates.contains(source.sampleRate) ? source.sampleRate
                : (source.sampleRate % 8_000 == 0 || source.sampleRate > 48_000 ? 48_000 : 44_100)
        case "opus" where container.isEmpty || container == "ogg":
            format = "opus"; outContainer = "ogg"; rate = 48_000
        default:
            return .failure(.init("\(profile.audioCodec.isEmpty ? profile.container : profile.audioCodec) in \(profile.container.isEmpty ? "any container" : profile.container)"))
        }
        guard let known = formats[format] else { return .failure(.init(format)) }
        // The transcoder writes the source's channels, at most two; it does not down-mix stereo to mono.
        let channels = min(2, max(1, source.channels))
        if profile.maxAudioChannels > 0 && channels > profile.maxAudioChannels {
            return .failure(.init("\(format) with \(profile.maxAudioChannels) channel(s) (streamd sends \(channels))"))
        }
        // The best the client takes: its transcoding limit (else its overall limit), else the
        // format's default; a codec profile's bitrate ceiling lowers it.
        var limit = client.maxTranscodingAudioBitrate > 0 ? client.maxTranscodingAudioBitrate : client.maxAudioBitrate
        if client.maxAudioBitrate > 0 { limit = min(limit, client.maxAudioBitrate) }
        var kbps = limit > 0 ? min(limit / 1000, known.range.upperBound) : known.defaultKbps
        for limitation in limitations(for: format, client) where limitation.name == "audioBitrate" && limitation.comparison == "LessThanEqual" {
            if let ceiling = limitation.values.first.flatMap({ Int($0) }) { kbps = min(kbps, ceiling / 1000) }
        }
        guard kbps >= known.range.lowerBound else {
            return .failure(.init("\(format) at \(kbps) kbit/s (the least streamd makes is \(known.range.lowerBound))"))
        }
        let stream = SubsonicStreamDetails(container: outContainer, codec: format, channels: channels, bitrate: kbps * 1000, sampleRate: rate)
        for limitation in limitations(for: format, client) where limitation.required && !holds(limitation, for: stream) {
            return .failure(.init("\(format): \(limitation.name) \(limitation.comparison) \(limitation.values.joined(separator: ","))"))
        }
        return .success(Transcode(format: format, kbps: kbps, stream: stream))
    }

    /// MPEG-1, 2 and 2.5 rates, which LAME encodes at without resampling.
    static let LAMERates: Set<Int> = [8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000]

    /// Why a transcoding profile was passed over.
    struct TranscodeRefusal: Error, Equatable {
        var why: String
        init(_ why: String) { self.why = why }
    }
}

/// A transcodeParams token handed out by getTranscodeDecision: what getTranscodeStream may send,
/// for whom. The token is 128 random bits; nothing in it can be changed to name another file or
/// user, since the grant it names is kept here.
struct TranscodeGrant: Sendable, Equatable {
    var userID: Int
    var userName: String
    var sid: String
    /// Whether the decision was direct play (the original is sent when no offset is asked).
    var original: Bool
    var transcode: SubsonicTranscodeDecision.Transcode?
    /// Unix seconds.
    var expires: Int
}

/// The grants handed out, oldest first out past `capacity`; each valid for `lifetime` seconds.
struct TranscodeGrants: Sendable {
    var byToken: [String: TranscodeGrant] = [:]
    var order: [String] = []
    var start = 0

    static let capacity = 20_000
    /// A day: a client may keep a decision for a queue it plays later (the spec asks for "a reasonable duration").
    static let lifetime = 86_400

    mutating func add(_ grant: TranscodeGrant) -> String {
        var random = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        let token = "st1" + String(decoding: (0..<32).map { _ in digits[Int.random(in: 0..<16, using: &random)] }, as: UTF8.self)
        byToken[token] = grant
        order.append(token)
        while byToken.count > Self.capacity, start < order.count {
            byToken[order[start]] = nil
            start += 1
        }
        if start > 4096 {
            order.removeFirst(start)
            start = 0
        }
        return token
    }

    func grant(_ token: String, now: Int) -> TranscodeGrant? {
        guard let grant = byToken[token], grant.expires >= now else { return nil }
        return grant
    }
}
