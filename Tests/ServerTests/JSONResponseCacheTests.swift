import Testing
@testable import StreamServer

/// The library API's answer cache: hits only for the same target and catalog generation, least
/// recently used out first, oversized answers never kept.
@Suite struct JSONResponseCacheTests {
    static func entry(_ size: Int, total: Int = 1) -> JSONResponseCache.Entry {
        .init(body: [UInt8](repeating: UInt8(ascii: "a"), count: size), headers: [("X-Total-Count", String(total))])
    }

    @Test func hit_sameTargetAndGeneration() {
        let cache = JSONResponseCache(capacityBytes: 1000)
        cache.insert("/api/albums", generation: 4, Self.entry(10))
        #expect(cache.lookup("/api/albums", generation: 4)?.body.count == 10)
        #expect(cache.lookup("/api/albums?limit=5", generation: 4) == nil)
    }

    @Test func anotherGeneration_isAMiss_andDropsTheEntry() {
        let cache = JSONResponseCache(capacityBytes: 1000)
        cache.insert("/api/tracks", generation: 1, Self.entry(10))
        #expect(cache.lookup("/api/tracks", generation: 2) == nil)
        #expect(cache.lookup("/api/tracks", generation: 1) == nil, "dropped, not kept for the old generation")
    }

    @Test func leastRecentlyUsed_goesFirst_downToThreeQuarters() {
        let cache = JSONResponseCache(capacityBytes: 1000)
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        for name in names { cache.insert(name, generation: 0, Self.entry(100)) }      // exactly full
        _ = cache.lookup("a", generation: 0)                                            // a is now the most recent
        cache.insert("k", generation: 0, Self.entry(100))                               // over: the four oldest go
        for name in ["b", "c", "d", "e"] { #expect(cache.lookup(name, generation: 0) == nil, "\(name) evicted") }
        for name in ["a", "f", "g", "h", "i", "j", "k"] { #expect(cache.lookup(name, generation: 0) != nil, "\(name) kept") }
    }

    @Test func oversizedAnswers_areNotKept() {
        let cache = JSONResponseCache(capacityBytes: 800)
        cache.insert("big", generation: 0, Self.entry(101))
        #expect(cache.lookup("big", generation: 0) == nil)
        cache.insert("fits", generation: 0, Self.entry(100))
        #expect(cache.lookup("fits", generation: 0) != nil)
    }

    /// Hashed 8 bytes at a time: a change of any one byte, at any place and in any bit of its
    /// word, changes the tag.
    @Test func etag_changesWithAnyOneByte() {
        let body = (0..<103).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        var tags: Set<String> = [JSONResponse.etag(of: body)]
        for position in body.indices {
            for flip: UInt8 in [0x01, 0x80] {
                var changed = body
                changed[position] ^= flip
                tags.insert(JSONResponse.etag(of: changed))
            }
        }
        #expect(tags.count == 1 + body.count * 2)
        #expect(JSONResponse.etag(of: body) == JSONResponse.etag(of: Array(body)))
        #expect(JSONResponse.etag(of: []) != JSONResponse.etag(of: [0]))
    }

    @Test func etag_coversTheHeaders() {
        #expect(Self.entry(10, total: 1).etag != Self.entry(10, total: 2).etag)
        #expect(Self.entry(10, total: 1).etag == Self.entry(10, total: 1).etag)
    }
}
