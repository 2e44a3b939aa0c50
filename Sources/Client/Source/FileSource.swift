/// A local file as a `ByteSource`: the same pipeline as HTTP, without the network.
public final class FileSource: ByteSource, @unchecked Sendable {
    // @unchecked: `file` is immutable and pread-based reads are thread-safe.
    public let name: String
    private let file: LocalFile

    public init(path: String) throws {
        name = path
        do { file = try LocalFile(path: path) } catch { throw SourceError.file(error.detail) }
    }

    public var size: Int { file.size }

    public func resourceSize() throws -> Int { file.size }

    public func readRange(_ range: Range<Int>) throws -> [UInt8] {
        try file.read(at: range.lowerBound, count: range.count)
    }

    public func run(into throttle: Throttle, from offset: Int, control: SourceControl) {
        control.setTotalSize(file.size)
        var position = offset
        // The player resets the throttle before starting (and before each seek): take its generation.
        var generation = throttle.currentGeneration
        // One read buffer for the whole play (no allocation per read).
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        while !control.isStopped {
            if let target = control.takeSeek() {
                position = target
                generation = throttle.currentGeneration
                continue
            }
            if position >= file.size {
                throttle.finish(generation: generation)
                control.waitForCommand(timeout: 1)
                continue
            }
            let room = throttle.freeSpace
            if room < 16 * 1024 && room < file.size - position {
                control.waitForCommand(timeout: 0.005)
                continue
            }
            do {
                let count = try file.read(at: position, into: UnsafeMutableRawBufferPointer(rebasing: chunk[..<min(chunk.count, room)]))
                if count == 0 {
                    throttle.finish(generation: generation)
                    continue
                }
                let written = throttle.write(UnsafeRawBufferPointer(rebasing: chunk[..<count]), generation: generation)
                position += written
                control.countBytes(written)
            } catch {
                throttle.finish(error: SourceError.file("\(error)"), generation: generation)
                control.waitForCommand(timeout: 1)
            }
        }
    }
}
