/// What the conditional header fields of a request decide for the selected representation,
/// evaluated in the order of RFC 9110 section 13.2.2.
public enum Precondition: Equatable, Sendable {
    /// Send the normal response; `rangeApplies` is false when If-Range no longer matches.
    case proceed(rangeApplies: Bool)
    /// 304: the client's copy is current.
    case notModified
    /// 412: If-Match or If-Unmodified-Since failed.
    case failed

    /// Evaluates If-Match, If-Unmodified-Since, If-None-Match, If-Modified-Since and If-Range
    /// for a representation with the strong `etag` and, when it has one, `lastModified`
    /// (seconds since the epoch). Dates that do not parse are ignored, as RFC 9110 says.
    public static func evaluate(_ request: HTTPRequest, etag: String, lastModified: Int?) -> Precondition {
        let safe = request.method == "GET" || request.method == "HEAD"
        // Steps 1-2: the client's copy must still be the current one.
        if let ifMatch = request.header("If-Match") {
            if !EntityTag.list(ifMatch, matches: etag, weak: false) { return .failed }
        } else if let since = request.header("If-Unmodified-Since"), let lastModified,
                  let date = HTTPDate.parse(since), lastModified > date {
            return .failed
        }
        // Steps 3-4: nothing new to send.
        if let ifNoneMatch = request.header("If-None-Match") {
            if EntityTag.list(ifNoneMatch, matches: etag, weak: true) { return safe ? .notModified : .failed }
        } else if safe, let since = request.header("If-Modified-Since"), let lastModified,
                  let date = HTTPDate.parse(since), lastModified <= date {
            return .notModified
        }
        // Step 5: a range of a representation that changed would mix two versions.
        guard safe, request.header("Range") != nil, let ifRange = request.header("If-Range") else {
            return .proceed(rangeApplies: true)
        }
        let trimmed = ifRange.trimmingCharacters(in: " \t")
        if trimmed.hasPrefix("\"") || trimmed.hasPrefix("W/") {
            // Strong comparison: a weak tag never matches.
            return .proceed(rangeApplies: trimmed == etag)
        }
        return .proceed(rangeApplies: lastModified != nil && HTTPDate.parse(trimmed) == lastModified)
    }
}

/// Entity-tag lists as If-Match and If-None-Match carry them (RFC 9110 section 8.8.3).
public enum EntityTag {
    /// Whether `list` (`*`, or `"a", W/"b"`) names `etag`; weak comparison ignores `W/`,
    /// strong comparison never matches a weak tag. A malformed list matches nothing.
    public static func list(_ list: String, matches etag: String, weak: Bool) -> Bool {
        let trimmed = list.trimmingCharacters(in: " \t")
        if trimmed == "*" { return true }
        guard let tags = parse(trimmed) else { return false }
        return tags.contains { $0.tag == etag && (weak || !$0.weak) }
    }

    /// The tags of a comma-separated list, quotes kept; nil when malformed. A tag's opaque part
    /// may itself hold commas, so the list is scanned rather than split.
    static func parse(_ text: String) -> [(weak: Bool, tag: String)]? {
        var tags: [(weak: Bool, tag: String)] = []
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == "," }
            if rest.isEmpty { return tags }
            var weak = false
            if rest.hasPrefix("W/") {
                weak = true
                rest = rest.dropFirst(2)
            }
            guard rest.first == "\"", let close = rest.dropFirst().firstIndex(of: "\"") else { return nil }
            tags.append((weak, String(rest[...close])))
            rest = rest[rest.index(after: close)...]
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard rest.isEmpty || rest.first == "," else { return nil }
        }
    }
}
