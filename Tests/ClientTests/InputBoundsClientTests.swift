import Testing
import TestSupport
@testable import StreamClient
@testable import StreamShared

/// Values from a server or a segment that would overflow the player's arithmetic: refused or
/// ignored, never a trap (issue 12, item 2).
@Suite struct InputBoundsClientTests {
    @Test func responseSizes_digitsOnlyAndAtMost2to40() {
        #expect(HTTPSource.Transfer.byteCount("12345") == 12_345)
        #expect(HTTPSource.Transfer.byteCount("0") == 0)
        #expect(HTTPSource.Transfer.byteCount("1099511627776") == 1 << 40)
        for bad in ["-5", "+5", "1099511627777", "99999999999999999999", "", " 5", "5 ", "0x10", "1e9"] {
            #expect(HTTPSource.Transfer.byteCount(bad) == nil, "'\(bad)'")
        }
    }

    @Test func segmentDecodeTime_boxOfInt64MaxBytes_isNil() {
        // An styp, then a box whose 64-bit size is Int.max: offset + size overflowed.
        let styp = be32(16) + Array("stypmsdh".utf8) + be32(0)
        let huge = be32(1) + Array("free".utf8) + be32(0x7FFF_FFFF) + be32(0xFFFF_FFFF) + [UInt8](repeating: 0, count: 32)
        #expect(HLSSource.firstDecodeTime(styp + huge, trackID: 1) == nil)
    }
}
