import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What /proc says about a running process: CPU time used and descriptors open.
enum ProcessProbe {
    /// User plus system CPU time of the whole process (all threads), in seconds.
    static func cpuSeconds(pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
        return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The share of one core the process used over the next `seconds` (1.0 = one core busy).
    static func cpuShare(pid: Int32, over seconds: Double) -> Double? {
        guard let before = cpuSeconds(pid: pid) else { return nil }
        let start = Date()
        Thread.sleep(forTimeInterval: seconds)
        guard let after = cpuSeconds(pid: pid) else { return nil }
        return (after - before) / Date().timeIntervalSince(start)
    }

    /// Descriptors the process has open now.
    static func openDescriptors(pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    /// Polls until the process has at most `target` descriptors open or `timeout` passes;
    /// returns the last count seen.
    /// The descriptor count once it has stopped changing (two reads 50 ms apart agree; at most
    /// 3 s): a server closes the descriptors of a finished exchange a moment after its answer.
    static func settledDescriptors(pid: Int32) -> Int {
        var last = openDescriptors(pid: pid)
        let deadline = Date().addingTimeInterval(TestTiming.seconds(3))
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            let now = openDescriptors(pid: pid)
            if now == last { break }
            last = now
        }
        return last
    }

    static func waitForDescriptors(pid: Int32, atMost target: Int, timeout: Double) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var count = openDescriptors(pid: pid)
        while count > target && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            count = openDescriptors(pid: pid)
        }
        return count
    }
}
