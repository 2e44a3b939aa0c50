import Testing
@testable import StreamClient
@testable import StreamShared

/// Playlist URIs resolved as RFC 3986 section 5.4 says, and local playlist paths.
@Suite struct URIReferenceTests {
    private static let base = "http://a/b/c/d;p?q"

    /// RFC 3986 section 5.4.1 (normal) and 5.4.2 (abnormal) examples.
    @Test(arguments: [
        ("g:h", "g:h"), ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"), ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q#s"), ("g#s", "http://a/b/c/g#s"), ("g?y#s", "http://a/b/c/g?y#s"),
        (";x", "http://a/b/c/;x"), ("g;x", "http://a/b/c/g;x"), ("g;x?y#s", "http://a/b/c/g;x?y#s"),
        ("", "http://a/b/c/d;p?q"), (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"),
        ("../", "http://a/b/"), ("../g", "http://a/b/g"), ("../..", "http://a/"), ("../../", "http://a/"),
        ("../../g", "http://a/g"), ("../../../g", "http://a/g"), ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"), ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."), ("..g", "http://a/b/c/..g"), ("./../g", "http://a/b/g"), ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"), ("g/../h", "http://a/b/c/h"), ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"), ("g?y/./x", "http://a/b/c/g?y/./x"), ("g#s/../x", "http://a/b/c/g#s/../x"),
    ])
    func rfc3986Examples(_ reference: String, _ expected: String) {
        #expect(HLSFetcher.resolve(reference, against: Self.base) == expected)
        #expect(URIReference(Substring(Self.base)).resolving(URIReference(Substring(reference))).text == expected)
    }

    @Test func segmentURIs_againstAStreamdPlaylist() {
        let playlist = "http://127.0.0.1:8080/hls/music/a%20b.mp3/index.m3u8?v=3"
        #expect(HLSFetcher.resolve("seg-0.mp3?v=3", against: playlist) == "http://127.0.0.1:8080/hls/music/a%20b.mp3/seg-0.mp3?v=3")
        #expect(HLSFetcher.resolve("/other/x.aac", against: playlist) == "http://127.0.0.1:8080/other/x.aac")
        #expect(HLSFetcher.resolve("HTTPS://cdn/x.ts", against: playlist) == "HTTPS://cdn/x.ts")
    }

    @Test func charactersAURIMayNotHold_arePercentEncoded() {
        #expect(HLSFetcher.resolve("my song é.aac", against: "http://h/p/list.m3u8") == "http://h/p/my%20song%20%C3%A9.aac")
        #expect(HLSFetcher.resolve("a%20b.aac", against: "http://h/p/list.m3u8") == "http://h/p/a%20b.aac")
        #expect(HLSFetcher.resolve("x<y>\"{}|.aac", against: "http://h/list.m3u8") == "http://h/x%3Cy%3E%22%7B%7D%7C.aac")
    }

    @Test func localPlaylist_resolvesBesideIt() {
        #expect(HLSFetcher.resolve("seg.aac", against: "/music/hls/index.m3u8") == "/music/hls/seg.aac")
        #expect(HLSFetcher.resolve("seg.aac?v=1", against: "/index.m3u8") == "/seg.aac")
        #expect(HLSFetcher.resolve("sub/seg.aac", against: "index.m3u8") == "sub/seg.aac")
        #expect(HLSFetcher.resolve("/abs/seg.aac", against: "dir/index.m3u8") == "/abs/seg.aac")
        #expect(HLSFetcher.directory(of: "a/b/") == "a")
    }
}
