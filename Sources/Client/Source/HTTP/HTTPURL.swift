/// An `http://` URL split into what a request needs: where to connect and what to ask for.
struct HTTPURL: Equatable, Sendable {
    /// The host as getaddrinfo takes it (an IPv6 literal without its brackets).
    var host: String
    var port: Int
    /// The request target: path and query, percent-encoded, never empty.
    var target: String
    /// The Host header's value (brackets and a non-default port kept).
    var hostHeader: String

    /// Why a URL cannot be requested by the own client.
    enum Problem: Error, Equatable {
        /// Not an http:// URL (https:// goes through libcurl).
        case notHTTP
        /// No host, a bad port, or user credentials (not supported).
        case malformed(String)
    }

    init(_ text: String) throws(Problem) {
        let reference = URIReference(Substring(text))
        guard reference.scheme?.lowercased() == "http" else { throw .notHTTP }
        guard let authority = reference.authority, !authority.isEmpty else { throw .malformed("no host") }
        guard !authority.contains("@") else { throw .malformed("credentials in the URL are not supported") }
        // The authority goes into the Host header as it is: no spaces, controls or non-ASCII.
        guard authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { throw .malformed("invalid characters in the host") }
        var hostPart = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .malformed("unclosed IPv6 literal") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .malformed("text after the IPv6 literal") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw .malformed("no host") }
        var port = 80
        if let portText, !portText.isEmpty {
            guard portText.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int(portText), value >= 1, value <= 65_535 else { throw .malformed("bad port \(portText)") }
            port = value
        }
        host = String(hostPart)
        self.port = port
        hostHeader = String(authority)
        // Spaces and non-ASCII in the path or query are sent percent-encoded, as browsers do.
        let path = reference.path.isEmpty ? "/" : URIReference.percentEncoded(String(reference.path))
        target = reference.query.map { path + "?" + URIReference.percentEncoded(String($0)) } ?? path
    }

    /// Where a `Location` header points, resolved against `base` (RFC 3986 section 5.2).
    static func resolve(_ location: String, against base: String) -> String {
        URIReference(Substring(base)).resolving(URIReference(Substring(URIReference.percentEncoded(location)))).text
    }
}
