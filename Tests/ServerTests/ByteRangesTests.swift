import Testing
@testable import StreamServer

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
