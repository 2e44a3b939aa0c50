import StreamShared

/// The shared URL side of the HTTP wire layer, as the own client and streamd's relay read URLs:
/// `HTTPAuthority` (also the server's Host check), `HTTPURL` (IPv6 literals, ports) and a
/// Location resolved against a base. The input is the URL text; up to its first newline, the
/// base a second line is resolved against. A URL that is accepted must be safe to put into a
/// request head as it is, and read the same way when rebuilt from its parts.
enum URLTarget {
    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        let first = String(lines[0])
        if let authority = HTTPAuthority(parsing: Substring(first)) {
            let rebuilt = (authority.isIPLiteral ? "[\(authority.host)]" : String(authority.host))
                + (authority.port.map { ":" + $0 } ?? "")
            require(rebuilt == first, "authority \(first.debugDescription) rebuilt as \(rebuilt.debugDescription)")
            require((authority.port?.utf8.count ?? 0) <= 5, "a port of more than 5 digits")
        }
        guard let url = try? HTTPURL(first) else {
            if lines.count == 2 { _ = HTTPURL.resolve(String(lines[1]), against: first) }
            return
        }
        require(!url.host.isEmpty && (1...65_535).contains(url.port), "host \(url.host.debugDescription) port \(url.port)")
        require(url.target.hasPrefix("/"), "target \(url.target.debugDescription)")
        // Nothing that could end a request line or a header: visible ASCII only.
        for part in [url.target, url.hostHeader, url.host] {
            require(part.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "unsafe byte in \(part.debugDescription)")
        }
        guard let again = try? HTTPURL("http://" + url.hostHeader + url.target) else {
            require(false, "\(first.debugDescription) rebuilt does not parse")
            return
        }
        require(again == url, "\(first.debugDescription) rebuilt reads differently")
        if lines.count == 2 {
            let resolved = HTTPURL.resolve(String(lines[1]), against: first)
            _ = try? HTTPURL(resolved)
        }
    }
}
