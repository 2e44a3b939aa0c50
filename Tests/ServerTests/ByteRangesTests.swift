import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

@Suite struct ByteRangesTests {
    @Test func closedRange() {
        #expect(RangeRequest.parse("bytes=0-99", size: 1000) == .ranges([0..<100]))
    }

    @Test func openEndedRange() {
        #expect(RangeRequest.parse("bytes=900-", size: 1000) == .ranges([900..<1000]))
    }

    @Test func suffixRange() {
        #expect(RangeRequest.parse("bytes=-100", size: 1000) == .ranges([900..<1000]))
        #expect(RangeRequest.parse("bytes=-5000", size: 1000) == .ranges([0..<1000]))
    }

    @Test func endPastSize_isClamped() {
        #expect(RangeRequest.parse("bytes=500-5000", size: 1000) == .ranges([500..<1000]))
    }

    @Test func severalRanges_keepOrder() {
        #expect(RangeRequest.parse("bytes=0-9, 20-29,-5", size: 100) == .ranges([0..<10, 20..<30, 95..<100]))
    }

    @Test func startPastEnd_isUnsatisfiable() {
        #expect(RangeRequest.parse("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(RangeRequest.parse("bytes=-0", size: 1000) == .unsatisfiable)
        #expect(RangeRequest.parse("bytes=0-", size: 0) == .unsatisfiable)
    }

    @Test(arguments: ["bytes=a-b", "bytes=5-1", "items=0-1", "bytes=", "bytes=--1", "bytes=1",
                      "bytes=99999999999999999999999-", "bytes=+1-2"])
    func invalid_isIgnored(header: String) {
        #expect(RangeRequest.parse(header, size: 1000) == .full)
    }

    @Test func tooManyRanges_isIgnored() {
        let header = "bytes=" + (0..<40).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(RangeRequest.parse(header, size: 1000) == .full)
    }
}

/// RFC 9110 section 14.2-14.3: overlapping and excessive ranges.
@Suite struct ByteRangesAbuseTests {
    @Test func copiesOfTheWholeFile_areMergedIntoOne() {
        let header = "bytes=" + Array(repeating: "0-", count: 16).joined(separator: ",")
        #expect(RangeRequest.parse(header, size: 1000) == .ranges([0..<1000]))
    }

    @Test func overlappingRanges_mergeInAscendingOrder() {
        #expect(RangeRequest.parse("bytes=50-149,0-99", size: 1000) == .ranges([0..<150]))
        #expect(RangeRequest.parse("bytes=500-599,0-99,90-109", size: 1000) == .ranges([0..<110, 500..<600]))
        // Touching ranges are one range.
        #expect(RangeRequest.parse("bytes=0-9,10-19", size: 1000) == .ranges([0..<20]))
        #expect(RangeRequest.parse("bytes=-100,900-", size: 1000) == .ranges([900..<1000]))
    }

    @Test func disjointRanges_keepRequestOrder() {
        #expect(RangeRequest.parse("bytes=500-599,0-99", size: 1000) == .ranges([500..<600, 0..<100]))
    }

    @Test func moreThan16Ranges_areIgnored() {
        let sixteen = "bytes=" + (0..<16).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        #expect(RangeRequest.parse(sixteen, size: 1000) != .full)
        let seventeen = "bytes=" + (0..<17).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        #expect(RangeRequest.parse(seventeen, size: 1000) == .full)
    }

    @Test func totalNeverExceedsTheFile() {
        for header in ["bytes=0-,0-,0-,-1000,0-999,1-998", "bytes=0-499,250-749,500-999,-1,0-0"] {
            guard case .ranges(let ranges) = RangeRequest.parse(header, size: 1000) else {
                Issue.record("not ranges: \(header)")
                continue
            }
            #expect(ranges.reduce(0) { $0 + $1.count } <= 1000, "\(header)")
        }
    }
}
