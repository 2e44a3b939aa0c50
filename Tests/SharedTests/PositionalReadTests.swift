import Foundation
import Testing
import StreamShared
#if canImport(Glibc)
import Glibc
#endif

/// The one pread loop: whole reads, reads cut short by the end of the file, nothing past it,
/// and a failing descriptor as a typed error with its errno.
@Suite struct PositionalReadTests {
    @Test func reads_upToTheEndOfTheFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("pread-\(getpid())-\(UUID().uuidString.prefix(8))")
        let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(content).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let fd = open(url.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(try PositionalRead.bytes(fd, at: 0, count: 10_000) == content)
        #expect(try PositionalRead.bytes(fd, at: 9_990, count: 100) == Array(content[9_990...]), "cut short by the end")
        #expect(try PositionalRead.bytes(fd, at: 10_000, count: 100) == [])
        #expect(try PositionalRead.bytes(fd, at: -1, count: 100) == [])
        #expect(try PositionalRead.bytes(fd, at: 5, count: 0) == [])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = try buffer.withUnsafeMutableBytes { raw in try PositionalRead.fill(fd, raw, at: 1000) }
        #expect(n == 4096 && buffer == Array(content[1000..<5096]))
    }

    @Test func aBadDescriptor_isATypedError() {
        #expect(throws: PositionalReadError(errno: EBADF)) { try PositionalRead.bytes(-1, at: 0, count: 10) }
    }
}
