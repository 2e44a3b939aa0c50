import StreamShared
import StreamHTTP

/// The credential files and fields streamd and streamplay read as text: a `~/.netrc` file
/// (`Netrc`, streamplay's logins) and `Cookie` request fields (`HTTPCookies`, the page's session
/// cookie). The first byte picks the cookie's name from a few; the rest is the text.
enum CredentialsTarget {
    static let cookieNames = ["streamd_session", "a", "", "x y"]

    static func run(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        // Words by Unicode scalar, as the netrc reader splits them: by Character, a blank followed
        // by a combining mark is one grapheme with the word after it (the fuzzer found that).
        let words = text.unicodeScalars.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" }).count
        let entries = Netrc.entries(text)
        // Each entry takes at least six words (machine, login, password and their values).
        require(entries.count * 6 <= words, "\(entries.count) entries from \(words) words")
        for entry in entries {
            for field in [entry.host, entry.login, entry.password] {
                require(field.utf8.count <= text.utf8.count, "a field longer than the file")
                require(!field.unicodeScalars.contains { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }, "a blank inside a field: \(field)")
            }
            require(entry.host == entry.host.lowercased(), "a host not lower-cased: \(entry.host)")
        }
        // The text as one Cookie field, and split at its newlines into several.
        let name = cookieNames[Int(first) % cookieNames.count]
        for fields in [[text], text.split(separator: "\n").map(String.init)] {
            guard let value = HTTPCookies.value(named: name, in: fields) else { continue }
            require(value.utf8.count <= text.utf8.count, "a value longer than the fields")
            require(!value.utf8.contains(UInt8(ascii: ";")), "a value across a `;`: \(value)")
            for edge in [value.utf8.first, value.utf8.last].compactMap({ $0 }) {
                require(edge != UInt8(ascii: " ") && edge != UInt8(ascii: "\t") && edge != UInt8(ascii: "\""), "an untrimmed value: \(value)")
            }
        }
    }
}
