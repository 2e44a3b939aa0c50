#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An `http://` URL split into what a request needs: where to connect and what to ask for.
/// The one URL reader of the own HTTP client and the server's relay.
public struct HTTPURL: Equatable, Sendable {
    /// The host as getaddrinfo takes it (an IPv6 literal without its brackets).
    public var host: String
    public var port: Int
    /// The request target: path and query, percent-encoded, never empty.
    public var target: String
    /// The Host header's value (brackets and a non-default port kept).
    public var hostHeader: String

    /// Why a URL cannot be requested.
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not an http:// URL (https:// goes through libcurl).
        case notHTTP
        /// No host, a bad port, user credentials (not supported), or an IP literal that is not IPv6.
        case malformed(String)

        public var description: String {
            switch self {
            case .notHTTP: return "not an http:// URL"
            case .malformed(let why): return why
            }
        }
    }

    public init(_ text: String) throws(Problem) {
        let reference = URIReference(Substring(text))
        guard reference.scheme?.lowercased() == "http" else { throw .notHTTP }
        guard let authority = reference.authority, !authority.isEmpty else { throw .malformed("no host") }
        guard !authority.unicodeScalars.contains("@") else { throw .malformed("credentials in the URL are not supported") }
        guard let parts = HTTPAuthority(parsing: authority) else {
            if authority.hasPrefix("[") && !authority.contains("]") { throw .malformed("unclosed IPv6 literal") }
            throw .malformed("invalid host or port '\(authority.prefix(100))'")
        }
        guard !parts.host.isEmpty else { throw .malformed("no host") }
        if parts.isIPLiteral {
            // getaddrinfo would resolve `[example.org]` as a name: only an IPv6 address goes
            // between brackets (IPvFuture and zone identifiers are not supported).
            var address = in6_addr()
            guard inet_pton(AF_INET6, String(parts.host), &address) == 1 else {
                throw .malformed("'[\(parts.host.prefix(100))]' is not an IPv6 address")
            }
        } else {
            guard !parts.host.contains("%") else { throw .malformed("percent-encoded host names are not supported") }
            guard parts.host.utf8.count <= 255 else { throw .malformed("host name longer than 255 bytes") }
        }
        var port = 80
        if let digits = parts.port, !digits.isEmpty {
            // HTTPAuthority has checked for 1 to 5 digits: Int() cannot fail or overflow.
            guard let value = Int(digits), (1...65_535).contains(value) else { throw .malformed("bad port \(digits)") }
            port = value
        }
        host = String(parts.host)
        self.port = port
        hostHeader = String(authority)
        // Spaces and non-ASCII in the path or query are sent percent-encoded, as browsers do.
        let path = reference.path.isEmpty ? "/" : URIReference.percentEncoded(String(reference.path))
        target = reference.query.map { path + "?" + URIReference.percentEncoded(String($0)) } ?? path
    }

    /// Where a `Location` header points, resolved against `base` (RFC 3986 section 5.2).
    public static func resolve(_ location: String, against base: String) -> String {
        URIReference(Substring(base)).resolving(URIReference(Substring(URIReference.percentEncoded(location)))).text
    }
}
