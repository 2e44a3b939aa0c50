import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
import StreamShared

/// The library API's answer cache: hits only for the same target and catalog generation, least
/// recently used out first, oversized answers never kept.
@Suite struct JSONResponseCacheTests {
    static func entry(_ size: Int, total: Int = 1) -> JSONResponseCache.Entry {
        .init(body: [UInt8](repeating: UInt8(ascii: "a"), count: size), headers: [("X-Total-Count", String(total))])
    }

    @Test func hit_sameTargetAndGeneration() {
        let cache = JSONResponseCache(capacityBytes: 1 << 16)
        cache.insert("/api/albums", generation: 4, Self.entry(10))
        #expect(cache.lookup("/api/albums", generation: 4)?.body.count == 10)
        #expect(cache.lookup("/api/albums?limit=5", generation: 4) == nil)
    }

    @Test func anotherGeneration_isAMiss_andDropsTheEntry() {
        let cache = JSONResponseCache(capacityBytes: 1 << 16)
        cache.insert("/api/tracks", generation: 1, Self.entry(10))
        #expect(cache.lookup("/api/tracks", generation: 2) == nil)
        #expect(cache.lookup("/api/tracks", generation: 1) == nil, "dropped, not kept for the old generation")
    }

    @Test func leastRecentlyUsed_goesFirst_downToThreeQuarters() {
        let cache = JSONResponseCache(capacityBytes: 10 * JSONResponseCache.cost("a", Self.entry(100)))
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        for name in names { cache.insert(name, generation: 0, Self.entry(100)) }      // exactly full
        _ = cache.lookup("a", generation: 0)                                            // a is now the most recent
        cache.insert("k", generation: 0, Self.entry(100))                               // over: the four oldest go
        for name in ["b", "c", "d", "e"] { #expect(cache.lookup(name, generation: 0) == nil, "\(name) evicted") }
        for name in ["a", "f", "g", "h", "i", "j", "k"] { #expect(cache.lookup(name, generation: 0) != nil, "\(name) kept") }
    }

    /// Admission on the second request: a target answered once is not kept, the second time it
    /// is; a target whose entry went stale with the catalog is kept again at once.
    @Test func admitOnSecondRequest_keepsOnlyTargetsAskedAgain() {
        let cache = JSONResponseCache(capacityBytes: 1 << 16, admitOnSecondRequest: true)
        cache.insert("/api/search?q=ri", generation: 1, Self.entry(10))
        #expect(cache.lookup("/api/search?q=ri", generation: 1) == nil, "first answer not kept")
        cache.insert("/api/search?q=ri", generation: 1, Self.entry(10))
        #expect(cache.lookup("/api/search?q=ri", generation: 1) != nil, "second answer kept")
        // One-off targets do not push the kept one out, however many there are.
        for n in 0..<500 { cache.insert("/api/tracks?offset=\(n)", generation: 1, Self.entry(100)) }
        #expect(cache.lookup("/api/search?q=ri", generation: 1) != nil)
        #expect(cache.lookup("/api/tracks?offset=7", generation: 1) == nil)
        // Stale after a change: the next answer is kept at once.
        #expect(cache.lookup("/api/search?q=ri", generation: 2) == nil)
        cache.insert("/api/search?q=ri", generation: 2, Self.entry(12))
        #expect(cache.lookup("/api/search?q=ri", generation: 2)?.body.count == 12)
        // The memory of one-off targets is bounded: it starts over when full.
        for n in 0..<(JSONResponseCache.seenOnceLimit + 10) { cache.insert("/x?\(n)", generation: 2, Self.entry(1)) }
        cache.insert("/x?5", generation: 2, Self.entry(1))
        #expect(cache.lookup("/x?5", generation: 2) == nil, "forgotten when the memory started over")
    }

    @Test func oversizedAnswers_areNotKept() {
        let cache = JSONResponseCache(capacityBytes: 8 * JSONResponseCache.cost("fits", Self.entry(100)))
        cache.insert("big!", generation: 0, Self.entry(101))
        #expect(cache.lookup("big!", generation: 0) == nil)
        cache.insert("fits", generation: 0, Self.entry(100))
        #expect(cache.lookup("fits", generation: 0) != nil)
    }

    /// Small answers under long targets (an empty search result, junk parameters up to the 8 KB
    /// request line): the targets count against the capacity, so their number stays bounded.
    /// Counted by bodies alone, 16 MiB held millions of 3-byte answers and their 8 KB keys.
    @Test func longTargets_countAgainstTheCapacity() {
        let capacity = 64 * 1024
        let cache = JSONResponseCache(capacityBytes: capacity)
        let pad = String(repeating: "x", count: 4000)
        let targets = (0..<200).map { "/api/search?q=\($0)&pad=\(pad)" }
        for target in targets { cache.insert(target, generation: 0, Self.entry(3)) }
        let kept = targets.filter { cache.lookup($0, generation: 0) != nil }.count
        #expect(kept >= 1, "small answers are still kept")
        #expect(kept <= capacity / 4000, "kept \(kept) entries of 4 KB targets in a \(capacity)-byte cache")
    }

    /// Hashed 8 bytes at a time: a change of any one byte, at any place and in any bit of its
    /// word, changes the tag.
    @Test func etag_changesWithAnyOneByte() {
        // 103 bytes: three rounds of the four lanes, a word and three bytes after them.
        let body = (0..<103).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        var tags: Set<String> = [JSONResponse.etag(of: body)]
        for position in body.indices {
            for flip: UInt8 in [0x01, 0x02, 0x10, 0x80] {
                var changed = body
                changed[position] ^= flip
                tags.insert(JSONResponse.etag(of: changed))
            }
        }
        #expect(tags.count == 1 + body.count * 4)
        #expect(JSONResponse.etag(of: body) == JSONResponse.etag(of: Array(body)))
        #expect(JSONResponse.etag(of: []) != JSONResponse.etag(of: [0]))
    }

    /// Words exchanged between lanes, or moved within one, change the tag too.
    @Test func etag_changesWhenWordsMove() {
        var generator = SplitMix64(seed: 7)
        let body = (0..<4096).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        var tags: Set<String> = [JSONResponse.etag(of: body)]
        for (a, b) in [(0, 1), (0, 4), (3, 7), (100, 257), (500, 501)] {
            var moved = body
            for k in 0..<8 { moved.swapAt(a * 8 + k, b * 8 + k) }
            tags.insert(JSONResponse.etag(of: moved))
        }
        #expect(tags.count == 6)
    }

    @Test func etag_coversTheHeaders() {
        #expect(Self.entry(10, total: 1).etag != Self.entry(10, total: 2).etag)
        #expect(Self.entry(10, total: 1).etag == Self.entry(10, total: 1).etag)
    }
}
