#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// Signed, expiring URLs for generic players (mpv, VLC, GStreamer), which cannot log in: a
/// playlist link handed to a logged-in user, and every media link inside the playlists such a
/// link returns, carry `exp` (Unix seconds), `uid` (the user's id) and `sig`, an HMAC-SHA-256
/// under a key derived from the server's key file over the method-independent path, the user
/// and the expiry. A link grants reading that one path as that user until it expires; changing
/// the path, user or expiry breaks the signature. Signatures never reach the logs (`LoggedTarget`).
public struct URLSigner: Sendable {
    let key: [UInt8]

    public init(key: [UInt8]) { self.key = key }

    /// The query (`exp=…&uid=…&sig=…`) that lets user `userID` read `path` (percent-encoded, as
    /// sent on the wire) for `seconds` from `now`.
    public func query(forPath path: String, userID: Int64, seconds: Int, now: Int = Int(time(nil))) -> String {
        let expires = now + seconds
        return "exp=\(expires)&uid=\(userID)&sig=\(signature(path: path, userID: userID, expires: expires))"
    }

    func signature(path: String, userID: Int64, expires: Int) -> String {
        let message = Array("streamd-link-v1\n\(path)\n\(userID)\n\(expires)".utf8)
        return Hex.string(Array(Sodium.hmacSHA256(message, key: key).prefix(20)))
    }

    /// The user id a signed request acts for, or nil when the signature is missing, wrong or expired.
    public func verify(_ request: HTTPRequest, now: Int = Int(time(nil))) -> Int64? {
        guard let expText = request.queryValue("exp"), let expires = Int(expText.prefix(12)),
              let uidText = request.queryValue("uid"), let userID = Int64(uidText.prefix(20)),
              let sig = request.queryValue("sig"), expires >= now else { return nil }
        let expected = signature(path: String(request.path), userID: userID, expires: expires)
        return Sodium.constantTimeEquals(Array(sig.lowercased().utf8), Array(expected.utf8)) ? userID : nil
    }

    /// The link signer for one user's responses (set on the request; see `HTTPRequest.linkSigner`).
    public func linkSigner(userID: Int64, seconds: Int) -> LinkSigner {
        let expires = Int(time(nil)) + seconds
        let signer = self
        return LinkSigner { path in
            "exp=\(expires)&uid=\(userID)&sig=\(signer.signature(path: path, userID: userID, expires: expires))"
        }
    }
}
