import StreamShared
#if canImport(Glibc)
import Glibc
#endif

/// The credentials streamplay sends to a server, per host: given with `--user` (Basic), a token
/// from `~/.config/streamplay/tokens` (Bearer; lines `HOST[:PORT] TOKEN`), or a `machine` entry
/// of `~/.netrc` (login and password, as curl and mpv read it). Sent only to the host they are
/// for: a playlist that links elsewhere, or a redirect, never carries them on.
public enum ServerCredentials {
    /// One server's credential.
    public enum Credential: Sendable, Equatable {
        case basic(user: String, password: String)
        case bearer(String)

        /// The `Authorization` header value.
        public var headerValue: String {
            switch self {
            case .basic(let user, let password): return "Basic " + Base64.encode(Array("\(user):\(password)".utf8))
            case .bearer(let token): return "Bearer " + token
            }
        }
    }

    private struct Table {
        /// "host:port" or "host" → credential; explicit ones (`--user`) first.
        var explicit: [String: Credential] = [:]
        var files: [String: Credential] = [:]
        var filesLoaded = false
    }

    private static let table = Lock(Table())
    /// Where the files are read from (tests point it elsewhere); nil: `$HOME`.
    nonisolated(unsafe) public static var homeOverride: String?

    /// Sends `credential` to `host` (on `port`, or any port when nil).
    public static func set(_ credential: Credential, host: String, port: Int?) {
        table.withLock { $0.explicit[key(host, port)] = credential }
    }

    /// The credential for a request to `host`:`port`, if any is known.
    public static func credential(host: String, port: Int) -> Credential? {
        table.withLock { table in
            if let found = table.explicit[key(host, port)] ?? table.explicit[key(host, nil)] { return found }
            if !table.filesLoaded {
                table.files = loadFiles()
                table.filesLoaded = true
            }
            return table.files[key(host, port)] ?? table.files[key(host, nil)]
        }
    }

    /// The `Authorization` header line for a request to `host`:`port`, if any.
    static func authorizationLine(host: String, port: Int) -> String? {
        credential(host: host, port: port).map { "Authorization: " + $0.headerValue }
    }

    private static func key(_ host: String, _ port: Int?) -> String {
        port.map { "\(host.lowercased()):\($0)" } ?? host.lowercased()
    }

    /// The tokens file, then `~/.netrc` (a token wins for the same host).
    static func loadFiles() -> [String: Credential] {
        guard let home = homeOverride ?? getenv("HOME").map({ String(cString: $0) }) else { return [:] }
        var found: [String: Credential] = [:]
        // The first entry for a host counts, as in curl.
        for (host, credential) in parseNetrc(read(home + "/.netrc") ?? "") where found[key(host, nil)] == nil {
            found[key(host, nil)] = credential
        }
        for line in (read(home + "/.config/streamplay/tokens") ?? "").split(whereSeparator: \.isNewline) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2, !fields[0].hasPrefix("#") else { continue }
            let target = fields[0].lowercased()
            if let colon = target.lastIndex(of: ":"), let port = Int(target[target.index(after: colon)...]) {
                found[key(String(target[..<colon]), port)] = .bearer(String(fields[1]))
            } else {
                found[key(target, nil)] = .bearer(String(fields[1]))
            }
        }
        return found
    }

    /// The `machine` entries of a netrc file with a login and a password (`Netrc.entries`).
    public static func parseNetrc(_ text: String) -> [(host: String, credential: Credential)] {
        Netrc.entries(text).map { ($0.host, .basic(user: $0.login, password: $0.password)) }
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
