import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

/// RFC 9110 section 13.2.2: the order the conditional header fields are evaluated in.
@Suite struct PreconditionsTests {
    let etag = "\"abc-1\""
    let modified = 1_700_000_000
    let before = "Mon, 01 Jan 1990 00:00:00 GMT"
    let after = "Fri, 01 Jan 2100 00:00:00 GMT"

    func evaluate(_ headers: [(String, String)], method: String = "GET") -> Precondition {
        let request = HTTPRequest(method: method, target: "/", minorVersion: 1,
                                  headers: [("Host", "x")] + headers.map { (name: $0.0, value: $0.1) })
        return Precondition.evaluate(request, etag: etag, lastModified: modified)
    }

    @Test func noConditions_proceed() {
        #expect(evaluate([]) == .proceed(rangeApplies: true))
    }

    @Test func ifMatch_strongComparison() {
        #expect(evaluate([("If-Match", "\"nope\"")]) == .failed)
        #expect(evaluate([("If-Match", "W/\"abc-1\"")]) == .failed)
        #expect(evaluate([("If-Match", "\"x\", \"abc-1\"")]) == .proceed(rangeApplies: true))
        #expect(evaluate([("If-Match", "*")]) == .proceed(rangeApplies: true))
        #expect(evaluate([("If-Match", "garbage")]) == .failed)
    }

    @Test func ifUnmodifiedSince() {
        #expect(evaluate([("If-Unmodified-Since", before)]) == .failed)
        #expect(evaluate([("If-Unmodified-Since", after)]) == .proceed(rangeApplies: true))
        // An invalid date is ignored; If-Match, when present, decides alone.
        #expect(evaluate([("If-Unmodified-Since", "yesterday")]) == .proceed(rangeApplies: true))
        #expect(evaluate([("If-Match", etag), ("If-Unmodified-Since", before)]) == .proceed(rangeApplies: true))
    }

    @Test func failedPrecondition_winsOverRangeAndNoneMatch() {
        #expect(evaluate([("If-Match", "\"old\""), ("Range", "bytes=0-9")]) == .failed)
        #expect(evaluate([("If-Match", "\"old\""), ("If-None-Match", etag)]) == .failed)
    }

    @Test func ifNoneMatch_weakComparison_andItsPrecedence() {
        #expect(evaluate([("If-None-Match", "W/\"abc-1\"")]) == .notModified)
        #expect(evaluate([("If-None-Match", "*")], method: "HEAD") == .notModified)
        #expect(evaluate([("If-None-Match", "\"other\""), ("If-Modified-Since", after)]) == .proceed(rangeApplies: true))
        #expect(evaluate([("If-Modified-Since", after)]) == .notModified)
        #expect(evaluate([("If-Modified-Since", before)]) == .proceed(rangeApplies: true))
    }

    @Test func ifRange() {
        #expect(evaluate([("Range", "bytes=0-1"), ("If-Range", etag)]) == .proceed(rangeApplies: true))
        #expect(evaluate([("Range", "bytes=0-1"), ("If-Range", "W/\"abc-1\"")]) == .proceed(rangeApplies: false))
        #expect(evaluate([("Range", "bytes=0-1"), ("If-Range", "\"old\"")]) == .proceed(rangeApplies: false))
        #expect(evaluate([("Range", "bytes=0-1"), ("If-Range", HTTPDate.format(modified))]) == .proceed(rangeApplies: true))
        #expect(evaluate([("Range", "bytes=0-1"), ("If-Range", before)]) == .proceed(rangeApplies: false))
    }

    @Test func entityTagLists() {
        #expect(EntityTag.list("\"a,b\", \"c\"", matches: "\"a,b\"", weak: false))
        #expect(EntityTag.list(" W/\"c\" ,\"d\"", matches: "\"c\"", weak: true))
        #expect(!EntityTag.list("\"a\" \"b\"", matches: "\"b\"", weak: true))
        #expect(!EntityTag.list("\"unterminated", matches: "\"unterminated\"", weak: true))
    }
}

/// The reason phrase table and bounded query numbers.
@Suite struct StatusAndQueryTests {
    @Test func everyCodeTheServerSends_hasItsStandardPhrase() {
        #expect(HTTPStatus.reason(422) == "Unprocessable Content")
        #expect(HTTPStatus.reason(501) == "Not Implemented")
        #expect(HTTPStatus.reason(412) == "Precondition Failed")
        for code in [200, 204, 206, 304, 400, 403, 404, 405, 408, 412, 413, 414, 416, 422, 431, 500, 501, 503, 505] {
            #expect(HTTPStatus.phrases[code] != nil, "\(code)")
        }
        #expect(!HTTPStatus.reason(499).hasPrefix("Status"))
    }

    @Test func integers_areBounded() {
        #expect(QueryValue.integer("64", in: 1...1_000_000) == 64)
        for text in ["0", "-1", "+5", "", "abc", "1000001", "9999999999999999", "99999999999999999999999", "6 4", "1e3"] {
            #expect(QueryValue.integer(text, in: 1...1_000_000) == nil, "\(text)")
        }
    }

    @Test func decimals_areBounded() {
        #expect(QueryValue.decimal("12.5", in: 0...604_800) == 12.5)
        #expect(QueryValue.decimal("1e-05", in: 0...604_800) == 0.00001)
        for text in ["-1", "inf", "nan", "1e300", "0x10", "", "12,5", "604801"] {
            #expect(QueryValue.decimal(text, in: 0...604_800) == nil, "\(text)")
        }
    }
}
