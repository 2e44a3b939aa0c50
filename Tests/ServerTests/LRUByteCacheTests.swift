import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

/// The segment cache: bounded by bytes, least recently used out first.
@Suite struct LRUByteCacheTests {
    static func bytes(_ n: Int) -> [UInt8] { [UInt8](repeating: 1, count: n) }

    @Test func evictsLeastRecentlyUsed_withinTheBound() {
        let cache = LRUByteCache(capacityBytes: 300)
        cache.insert("a", Self.bytes(100))
        cache.insert("b", Self.bytes(100))
        cache.insert("c", Self.bytes(100))
        #expect(cache.lookup("a") != nil, "a is used again, so b is now the oldest")
        cache.insert("d", Self.bytes(100))
        #expect(cache.lookup("b") == nil, "b went first")
        #expect(cache.lookup("a") != nil && cache.lookup("c") != nil && cache.lookup("d") != nil)
        #expect(cache.size == 300, "never above the bound")
    }

    @Test func oversizedValue_isNotStored() {
        let cache = LRUByteCache(capacityBytes: 100)
        cache.insert("small", Self.bytes(10))
        cache.insert("huge", Self.bytes(101))
        #expect(cache.lookup("huge") == nil, "a value above the bound would evict everything for nothing")
        #expect(cache.lookup("small") != nil, "and it did not")
    }

    @Test func zeroCapacity_cachesNothing() {
        let cache = LRUByteCache(capacityBytes: 0)
        var made = 0
        for _ in 0..<3 { _ = cache.value(for: "k") { made += 1; return Self.bytes(1) } }
        #expect(made == 3, "every request generates")
        #expect(cache.size == 0)
    }

    @Test func value_reportsHits() {
        let cache = LRUByteCache(capacityBytes: 1000)
        #expect(cache.value(for: "k") { Self.bytes(5) }.hit == false)
        #expect(cache.value(for: "k") { Self.bytes(6) } == (Self.bytes(5), true), "the stored bytes come back")
    }

    @Test func replacingAKey_keepsTheAccountRight() {
        let cache = LRUByteCache(capacityBytes: 1000)
        for n in 1...50 { cache.insert("k", Self.bytes(n)) }
        #expect(cache.size == 50)
        #expect(cache.stats.entries == 1)
    }

    @Test func manyKeys_staysBounded() {
        let cache = LRUByteCache(capacityBytes: 10_000)
        for i in 0..<5000 { cache.insert("k\(i)", Self.bytes(97)) }
        #expect(cache.size <= 10_000 && cache.stats.entries == 10_000 / 97)
        #expect(cache.lookup("k4999") != nil && cache.lookup("k0") == nil)
    }
}
