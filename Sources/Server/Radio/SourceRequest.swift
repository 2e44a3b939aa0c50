import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS

/// What a live source's request (`PUT`/`SOURCE /radio/NAME`) says, checked: its credentials,
/// stream type and station headers (Icecast's `ice-*`, or SHOUTcast's `icy-*`).
struct SourceRequest {
    var codec: AudioFrameSplitter.Codec
    var station: StationInfo
    var kbps: Int?

    /// Why a source is refused, with Icecast's status for it.
    enum Refusal: Error, Equatable {
        case unauthorized
        case unsupportedType(String)
        case badFraming

        var status: Int {
            switch self {
            case .unauthorized: return 401
            case .unsupportedType: return 415
            case .badFraming: return 400
            }
        }

        var message: String {
            switch self {
            case .unauthorized: return "authentication required"
            case .unsupportedType(let type): return "content type '\(type)' is not a stream streamd can relay (audio/mpeg, audio/aac or audio/ogg)"
            case .badFraming: return "bad request body framing"
            }
        }
    }

    /// Whether the request carries Basic credentials `source:<password>`.
    static func isAuthorized(_ request: HTTPRequest, password: String?) -> Bool {
        guard let password, let credentials = BasicCredentials.parse(request.header("Authorization")) else { return false }
        return credentials.user == "source" && BasicCredentials.constantTimeEquals(credentials.password, password)
    }

    static func parse(_ request: HTTPRequest, name: String, password: String?) throws(Refusal) -> SourceRequest {
        guard isAuthorized(request, password: password) else { throw .unauthorized }
        let type = mediaType(request.header("Content-Type") ?? "audio/mpeg")
        guard let codec = codec(mediaType: type) else { throw .unsupportedType(String(type.prefix(100))) }
        func field(_ names: String...) -> String? {
            for name in names {
                if let value = request.header(name), !value.isEmpty { return String(value.prefix(256)) }
            }
            return nil
        }
        let station = StationInfo(name: field("ice-name", "icy-name") ?? name, genre: field("ice-genre", "icy-genre"),
                                  url: field("ice-url", "icy-url"), description: field("ice-description", "icy-description"))
        let bitrate = field("ice-bitrate", "icy-br").flatMap { Int($0.prefix(6)) }
            ?? field("ice-audio-info").flatMap(Self.bitrate(inAudioInfo:))
        return SourceRequest(codec: codec, station: station, kbps: bitrate.flatMap { (1...10_000).contains($0) ? $0 : nil })
    }

    /// The media type of a Content-Type value, parameters dropped, lower case.
    static func mediaType(_ contentType: String) -> String {
        contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: " \t").lowercased() } ?? ""
    }

    /// The stream a media type names (sources and relays' upstreams alike); nil for one a channel cannot pass.
    static func codec(mediaType type: String) -> AudioFrameSplitter.Codec? {
        switch type {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3": return .mpeg
        case "audio/aac", "audio/aacp", "audio/x-aac": return .adts
        case "audio/ogg", "application/ogg", "audio/opus", "audio/vorbis": return .ogg
        default: return nil
        }
    }

    /// `bitrate=128` out of `ice-audio-info: samplerate=44100;bitrate=128;channels=2`.
    static func bitrate(inAudioInfo info: String) -> Int? {
        for pair in info.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: " ").lowercased() == "bitrate" {
                return Int(parts[1].trimmingCharacters(in: " ").prefix(6))
            }
        }
        return nil
    }
}
