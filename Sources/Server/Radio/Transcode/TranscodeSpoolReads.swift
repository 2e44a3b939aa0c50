#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP

/// The transcode spools' reads, on threads of their own: a `TranscodeReader` on an event loop
/// asks for the next chunk and sleeps; a thread here preads it (a disk wait, if the page cache
/// no longer holds it, costs this thread, not the loop) and wakes the reader's loop. Its own
/// small pool rather than the server's blocking pool, so a stream's next chunk never queues
/// behind slow catalog queries or cover resizes.
final class TranscodeSpoolReads: Sendable {
    /// Bytes a reader asks for at once.
    static let chunk = 128 * 1024
    private let pool: BlockingPool

    init(threads: Int = 2) throws(ThreadError) {
        pool = try BlockingPool(threads: threads, capacity: 1 << 16, name: "transcode-read")
    }

    /// Reads up to `count` bytes of `job`'s spool from `position` on a read thread, then calls
    /// `done` there with them (empty: the read failed). False when the pool takes no more work
    /// (the server is stopping): `done` is not called.
    func read(_ job: TranscodeJob, at position: Int, count: Int, done: @escaping @Sendable ([UInt8]) -> Void) -> Bool {
        pool.submit(label: "transcode \(job.number) spool read") {
            done(job.readSpool(at: position, count: count))
        }
    }

    /// Stops the read threads (reads still queued are dropped).
    func shutdown(deadline: UInt64) { pool.shutdown(deadline: deadline) }
}
