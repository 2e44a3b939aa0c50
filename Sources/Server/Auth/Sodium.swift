internal import CSodium

/// Why a libsodium call failed.
public enum SodiumError: Error, Equatable, CustomStringConvertible {
    /// `sodium_init` failed (no entropy source).
    case unavailable
    /// Hashing a password ran out of memory (argon2id needs `Sodium.passwordMemoryBytes`).
    case hashFailed
    /// A sealed box that does not open under the key: altered, truncated, or another key's.
    case sealedBoxInvalid

    public var description: String {
        switch self {
        case .unavailable: return "libsodium: cannot initialize (no entropy source?)"
        case .hashFailed: return "libsodium: argon2id password hashing failed (out of memory?)"
        case .sealedBoxInvalid: return "libsodium: a sealed secret does not open under the key file (wrong key or altered)"
        }
    }
}

/// The one wrapper of libsodium: password hashes (argon2id), secret boxes (XSalsa20-Poly1305),
/// HMAC-SHA-256, keyed BLAKE2b, random bytes and constant-time comparison. No pointer leaves it.
public enum Sodium {
    /// argon2id cost: 2 passes over 19 MiB (OWASP's argon2id minimum), about 30-60 ms here:
    /// slow enough that a stolen database is expensive to guess through, cheap enough for a
    /// login on a small server with the failed-login back-off in front of it.
    static let passwordOpsLimit: UInt64 = 2
    static let passwordMemoryBytes = 19 << 20

    /// Key size of `seal`/`open` and `hmacSHA256`.
    public static let keyBytes = 32

    private static let initialized: Bool = sodium_init() >= 0

    /// Throws when libsodium cannot start; every other function calls it first.
    public static func ensureInitialized() throws(SodiumError) {
        guard initialized else { throw .unavailable }
    }

    /// `count` bytes from the system's random source (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        _ = initialized
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { randombytes_buf(base, raw.count) }
        }
        return bytes
    }

    /// The argon2id hash string of `password` (`$argon2id$v=19$m=...`), salt included.
    public static func hashPassword(_ password: String) throws(SodiumError) -> String {
        try ensureInitialized()
        var out = [CChar](repeating: 0, count: Int(crypto_pwhash_strbytes()))
        // withCString: a pointer even for "" (the length, not the terminator, bounds the bytes).
        let length = UInt64(password.utf8.count)
        let status = password.withCString { chars in
            crypto_pwhash_str_alg(&out, chars, length, passwordOpsLimit, passwordMemoryBytes, crypto_pwhash_alg_argon2id13())
        }
        guard status == 0 else { throw .hashFailed }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `password` matches `hash` (a string from `hashPassword`); false for a malformed hash.
    public static func verifyPassword(_ password: String, hash: String) -> Bool {
        guard initialized else { return false }
        let length = UInt64(password.utf8.count)
        return hash.withCString { hashChars in
            password.withCString { chars in crypto_pwhash_str_verify(hashChars, chars, length) == 0 }
        }
    }

    /// `message` encrypted and authenticated under `key` (32 bytes): a random nonce, then the box.
    public static func seal(_ message: [UInt8], key: [UInt8]) throws(SodiumError) -> [UInt8] {
        try ensureInitialized()
        precondition(key.count == keyBytes, "secretbox key must be 32 bytes")
        let nonce = randomBytes(Int(crypto_secretbox_noncebytes()))
        var box = [UInt8](repeating: 0, count: message.count + Int(crypto_secretbox_macbytes()))
        _ = crypto_secretbox_easy(&box, message, UInt64(message.count), nonce, key)
        return nonce + box
    }

    /// The message `seal` sealed under `key`; throws when the bytes were altered or the key differs.
    public static func open(_ sealed: [UInt8], key: [UInt8]) throws(SodiumError) -> [UInt8] {
        try ensureInitialized()
        let nonceBytes = Int(crypto_secretbox_noncebytes()), macBytes = Int(crypto_secretbox_macbytes())
        guard key.count == keyBytes, sealed.count >= nonceBytes + macBytes else { throw .sealedBoxInvalid }
        let nonce = Array(sealed[..<nonceBytes]), box = Array(sealed[nonceBytes...])
        var message = [UInt8](repeating: 0, count: box.count - macBytes)
        guard crypto_secretbox_open_easy(&message, box, UInt64(box.count), nonce, key) == 0 else { throw .sealedBoxInvalid }
        return message
    }

    /// HMAC-SHA-256 of `message` under `key` (32 bytes).
    public static func hmacSHA256(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        _ = initialized
        precondition(key.count == keyBytes, "HMAC key must be 32 bytes")
        var out = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_bytes()))
        _ = crypto_auth_hmacsha256(&out, message, UInt64(message.count), key)
        return out
    }

    /// BLAKE2b-256 of `message`, keyed when `key` is given (16...64 bytes): how API keys and
    /// session tokens are stored (random 32-byte secrets need no slow hash).
    public static func hash(_ message: [UInt8], key: [UInt8] = []) -> [UInt8] {
        _ = initialized
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&out, out.count, message, UInt64(message.count), key.isEmpty ? nil : key, key.count)
        return out
    }

    /// SHA-256 of `message` (CSP hashes of the page's inline script).
    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        _ = initialized
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_bytes()))
        _ = crypto_hash_sha256(&out, message, UInt64(message.count))
        return out
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths (`sodium_memcmp`).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return sodium_memcmp(a, b, a.count) == 0
    }
}
