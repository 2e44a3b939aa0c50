import StreamShared

/// `Authorization: Basic <base64(user:password)>` (RFC 7617), as radio sources and Icecast's admin
/// URLs send it.
public struct BasicCredentials: Sendable, Equatable {
    public var user: String
    public var password: String

    /// The credentials in an Authorization header value; nil for any other scheme or for text
    /// that is not base64 of `user:password`. At most 4 KiB of header is looked at.
    public static func parse(_ header: String?) -> BasicCredentials? {
        guard let header, header.utf8.count <= 4096 else { return nil }
        let trimmed = header.trimmingCharacters(in: " \t")
        guard let space = trimmed.firstIndex(of: " "), trimmed[..<space].lowercased() == "basic" else { return nil }
        let token = trimmed[trimmed.index(after: space)...].trimmingCharacters(in: " \t")
        guard let decoded = Base64.decode(token.utf8, ignoringWhitespace: false) else { return nil }
        guard let colon = decoded.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let user = decoded[..<colon], password = decoded[(colon + 1)...]
        // Control bytes have no place in either (and would end up in logs).
        guard !decoded.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        return BasicCredentials(user: String(decoding: user, as: UTF8.self), password: String(decoding: password, as: UTF8.self))
    }

    /// Compares in time independent of where the strings first differ.
    public static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0 && x.count == y.count
    }
}
