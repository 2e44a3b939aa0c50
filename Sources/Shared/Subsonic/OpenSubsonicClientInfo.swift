/// What a client says it can play (OpenSubsonic's `ClientInfo`, the JSON body of
/// getTranscodeDecision). Bitrates are in bit/s, as the spec's examples give them; 0 is no limit.
public struct OpenSubsonicClientInfo: Sendable, Equatable {
    /// A way the client plays a file as it is. An empty list matches anything.
    public struct DirectPlayProfile: Sendable, Equatable {
        public var containers: [String] = []
        public var audioCodecs: [String] = []
        public var protocols: [String] = []
        public var maxAudioChannels = 0

        public init(containers: [String] = [], audioCodecs: [String] = [], protocols: [String] = [], maxAudioChannels: Int = 0) {
            self.containers = containers
            self.audioCodecs = audioCodecs
            self.protocols = protocols
            self.maxAudioChannels = maxAudioChannels
        }
    }

    /// A format the client takes a transcode in, in the client's order of preference.
    public struct TranscodingProfile: Sendable, Equatable {
        public var container = ""
        public var audioCodec = ""
        public var `protocol` = ""
        public var maxAudioChannels = 0

        public init(container: String = "", audioCodec: String = "", protocol: String = "", maxAudioChannels: Int = 0) {
            self.container = container
            self.audioCodec = audioCodec
            self.protocol = `protocol`
            self.maxAudioChannels = maxAudioChannels
        }
    }

    /// One condition of a codec profile (`audioBitrate LessThanEqual 320000`).
    public struct Limitation: Sendable, Equatable {
        public var name: String
        public var comparison: String
        public var values: [String]
        public var required: Bool

        public init(name: String, comparison: String, values: [String], required: Bool) {
            self.name = name
            self.comparison = comparison
            self.values = values
            self.required = required
        }
    }

    /// The conditions a codec's streams must meet for this client.
    public struct CodecProfile: Sendable, Equatable {
        public var name: String
        public var limitations: [Limitation]

        public init(name: String, limitations: [Limitation]) {
            self.name = name
            self.limitations = limitations
        }
    }

    public var name = ""
    public var platform = ""
    public var maxAudioBitrate = 0
    public var maxTranscodingAudioBitrate = 0
    public var directPlay: [DirectPlayProfile] = []
    public var transcoding: [TranscodingProfile] = []
    public var codecProfiles: [CodecProfile] = []

    /// Largest body read (the HTTP core reads at most 256 KiB ahead; a ClientInfo is ~2 KiB).
    public static let maxBodyBytes = 64 * 1024
    /// Most JSON values taken from one body, and most entries of each list: bounds the work and
    /// memory whatever the body holds.
    public static let maxValues = 4096
    public static let maxListItems = 64

    /// Reads a ClientInfo body; a body that is not one is refused saying why.
    public init(reading bytes: [UInt8]) throws(ClientInfoError) {
        guard bytes.count <= Self.maxBodyBytes else { throw ClientInfoError("ClientInfo over \(Self.maxBodyBytes) bytes") }
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes, maxValues: Self.maxValues)
        } catch {
            throw ClientInfoError("ClientInfo is not JSON (\(error))")
        }
        guard case .object = root else { throw ClientInfoError("ClientInfo must be a JSON object") }
        name = try Self.string(root["name"], "name") ?? ""
        platform = try Self.string(root["platform"], "platform") ?? ""
        maxAudioBitrate = try Self.count(root["maxAudioBitrate"], "maxAudioBitrate") ?? 0
        maxTranscodingAudioBitrate = try Self.count(root["maxTranscodingAudioBitrate"], "maxTranscodingAudioBitrate") ?? 0
        for item in try Self.list(root["directPlayProfiles"], "directPlayProfiles") {
            directPlay.append(DirectPlayProfile(
                containers: try Self.names(item["containers"] ?? item["container"], "directPlayProfiles.containers"),
                audioCodecs: try Self.names(item["audioCodecs"] ?? item["audioCodec"], "directPlayProfiles.audioCodecs"),
                protocols: try Self.names(item["protocols"] ?? item["protocol"], "directPlayProfiles.protocols"),
                maxAudioChannels: try Self.count(item["maxAudioChannels"], "directPlayProfiles.maxAudioChannels") ?? 0))
        }
        for item in try Self.list(root["transcodingProfiles"], "transcodingProfiles") {
            // Earlier drafts of the spec used the direct-play spelling (`containers`, a string).
            let container = try Self.names(item["container"] ?? item["containers"], "transcodingProfiles.container")
            let codec = try Self.names(item["audioCodec"] ?? item["audioCodecs"], "transcodingProfiles.audioCodec")
            let wire = try Self.names(item["protocol"] ?? item["protocols"], "transcodingProfiles.protocol")
            transcoding.append(TranscodingProfile(container: container.first ?? "", audioCodec: codec.first ?? "",
                                                  protocol: wire.first ?? "",
                                                  maxAudioChannels: try Self.count(item["maxAudioChannels"], "transcodingProfiles.maxAudioChannels") ?? 0))
        }
        for item in try Self.list(root["codecProfiles"], "codecProfiles") {
            guard let codec = try Self.string(item["name"], "codecProfiles.name") else { throw ClientInfoError("codecProfiles.name is missing") }
            var limitations: [Limitation] = []
            for limit in try Self.list(item["limitations"], "codecProfiles.limitations") {
                guard let name = try Self.string(limit["name"], "limitations.name"),
                      let comparison = try Self.string(limit["comparison"], "limitations.comparison") else {
                    throw ClientInfoError("a limitation needs a name and a comparison")
                }
                // `values` (the spec), or `value` (its first draft).
                let values = try Self.names(limit["values"] ?? limit["value"], "limitations.values", lowercased: false)
                var required = false
                if case .bool(let value)? = limit["required"] { required = value }
                limitations.append(Limitation(name: name, comparison: comparison, values: values, required: required))
            }
            codecProfiles.append(CodecProfile(name: codec.lowercased(), limitations: limitations))
        }
    }

    public init() {}

    static func string(_ value: JSONValue?, _ field: String) throws(ClientInfoError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return String(text.prefix(256))
        default: throw ClientInfoError("\(field) must be a string")
        }
    }

    static func count(_ value: JSONValue?, _ field: String) throws(ClientInfoError) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .number?:
            guard let number = value?.int, number >= 0, number <= 1 << 40 else { throw ClientInfoError("\(field) must be a whole number ≥ 0") }
            return number
        default: throw ClientInfoError("\(field) must be a number")
        }
    }

    static func list(_ value: JSONValue?, _ field: String) throws(ClientInfoError) -> [JSONValue] {
        switch value {
        case nil, .null?: return []
        case .array(let items)?:
            guard items.count <= maxListItems else { throw ClientInfoError("\(field) has more than \(maxListItems) entries") }
            for item in items { guard case .object = item else { throw ClientInfoError("\(field) entries must be objects") } }
            return items
        default: throw ClientInfoError("\(field) must be an array")
        }
    }

    /// A list of names: an array of strings, or one string of comma-separated names (a draft's
    /// form); lower-cased for matching unless told otherwise; `*` and "" mean any.
    static func names(_ value: JSONValue?, _ field: String, lowercased: Bool = true) throws(ClientInfoError) -> [String] {
        var texts: [String] = []
        switch value {
        case nil, .null?: return []
        case .string(let text)?: texts = text.split(separator: ",").map(String.init)
        case .array(let items)?:
            guard items.count <= maxListItems else { throw ClientInfoError("\(field) has more than \(maxListItems) entries") }
            for item in items {
                guard case .string(let text) = item else { throw ClientInfoError("\(field) must hold strings") }
                texts.append(text)
            }
        default: throw ClientInfoError("\(field) must be a string or an array of strings")
        }
        return texts.map { String($0.trimmingSpaces.prefix(64)) }.map { lowercased ? $0.lowercased() : $0 }
            .filter { !$0.isEmpty && $0 != "*" }
    }
}

private extension String {
    var trimmingSpaces: Substring {
        var text = self[...]
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}

/// Why a ClientInfo body was refused.
public struct ClientInfoError: Error, Equatable, Sendable {
    public var why: String
    public init(_ why: String) { self.why = why }
}
