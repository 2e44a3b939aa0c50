import StreamHTTP

/// An HLS playlist asked for through a signed link (`/api/sign`), with every URI in it signed
/// too, for the same user and expiry: a generic player (mpv, VLC, GStreamer) that opened the
/// signed master playlist can follow it to the media playlist, the init segment and every
/// segment, none of which it could fetch otherwise (it cannot log in).
enum HLSSignedPlaylist {
    /// `text` with each URI line and each `URI="…"` attribute followed by the signing query of
    /// its path; the URIs are relative to `directory` (the playlist's own percent-encoded path up
    /// to its last `/`), which is what each signature covers, as the player will ask for it.
    static func sign(_ text: String, directory: Substring, signer: LinkSigner) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count * 2)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                // keep the blank line
            } else if line.hasPrefix("#") {
                if let open = line.firstRange(of: "URI=\""), let close = line[open.upperBound...].firstIndex(of: "\"") {
                    out += line[..<open.upperBound]
                    out += signed(line[open.upperBound..<close], directory: directory, signer: signer)
                    out += line[close...]
                } else {
                    out += line
                }
            } else {
                out += signed(line, directory: directory, signer: signer)
            }
            out += "\n"
        }
        out.removeLast()
        return out
    }

    /// One relative URI (a name and maybe a query) with the signing query of its path added.
    static func signed(_ uri: Substring, directory: Substring, signer: LinkSigner) -> String {
        let name = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? uri
        // Only the playlist's own names and those of the folders below it (a ladder's variants:
        // `opus-64/index.m3u8`); no scheme, no absolute path, no way up: nothing else is signed.
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.firstIndex(of: ":") == nil, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            return String(uri)
        }
        return uri + (uri.firstIndex(of: "?") != nil ? "&" : "?") + signer.query(String(directory) + name)
    }
}
