import Foundation
import Testing
import TestSupport
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
#if canImport(Glibc)
import Glibc
#endif

/// The posix_spawn wrapper: pipes, exit and signal statuses, nothing leaked into the child.
@Suite(.ownThreads) struct ChildProcessTests {
    static func readAll(_ fd: Int32, timeoutMillis: Int32 = 10_000) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<10_000 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, timeoutMillis) > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EAGAIN { continue }
            guard n > 0 else { break }
            out += buffer[0..<n]
        }
        return out
    }

    @Test func echoesThroughItsPipes_andExitsZero() throws {
        let child = try ChildProcess(executable: "/bin/cat", arguments: [], environment: [])
        let message = Array("hello through a pipe\n".utf8)
        #expect(message.withUnsafeBytes { write(child.input, $0.baseAddress, $0.count) } == message.count)
        child.closeInput()
        #expect(Self.readAll(child.output) == message)
        #expect(child.wait() == .exited(0))
    }

    @Test func exitStatusAndStderr_areReported() throws {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo oops >&2; exit 3"], environment: [])
        #expect(String(decoding: Self.readAll(child.errors), as: UTF8.self) == "oops\n")
        #expect(child.wait() == .exited(3))
    }

    @Test func deathBySignal_isReportedAsTheSignal() throws {
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "kill -ILL $$"], environment: [])
        #expect(child.wait() == .signalled(SIGILL))
        #expect(child.wait().description == "signal 4")
    }

    @Test func kill_endsAStuckChild() throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], environment: [])
        #expect(child.poll() == nil, "still running")
        let started = Date()
        child.kill()
        #expect(child.wait() == .signalled(SIGKILL))
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func stop_closesInputThenKillsAfterTheGrace() throws {
        let polite = try ChildProcess(executable: "/bin/cat", arguments: [], environment: [])
        polite.stop()
        #expect(polite.termination == .exited(0), "cat ends at end of input")
        let deaf = try ChildProcess(executable: "/bin/sleep", arguments: ["30"], environment: [])
        deaf.stop(graceNanos: 100_000_000)
        #expect(deaf.termination == .signalled(SIGKILL), "a child that ignores its stdin is killed")
    }

    @Test func childGetsOnlyItsThreeDescriptors_anItsOwnProcessGroup() throws {
        // An open, inheritable descriptor in the parent must not reach the child.
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let child = try ChildProcess(executable: "/bin/sh", arguments: ["-c", "ls /proc/$$/fd; cut -d' ' -f5 /proc/$$/stat"],
                                     environment: ["PATH=/usr/bin:/bin"])
        let lines = String(decoding: Self.readAll(child.output), as: UTF8.self).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(child.wait() == .exited(0))
        // The shell itself may hold one more (the directory it lists); nothing of ours.
        let fds = lines.dropLast().compactMap { Int($0) }
        #expect(!fds.contains(Int(leaked)) || leaked <= 2, "descriptor \(leaked) leaked: \(fds)")
        #expect(fds.filter { $0 > 2 }.count <= 1, "only 0, 1, 2 (and ls's own): \(fds)")
        #expect(lines.last.flatMap { Int($0) } == Int(child.pid), "own process group: \(lines.last ?? "")")
    }

    @Test func environment_isExactlyWhatWasGiven() throws {
        let child = try ChildProcess(executable: "/usr/bin/env", arguments: [], environment: ["A=1", "B=two words"])
        #expect(String(decoding: Self.readAll(child.output), as: UTF8.self) == "A=1\nB=two words\n")
        #expect(child.wait() == .exited(0))
    }

    @Test func missingExecutable_throwsWithErrno() {
        do {
            _ = try ChildProcess(executable: "/nonexistent/program", arguments: [], environment: [])
            Issue.record("spawned a program that does not exist")
        } catch {
            #expect(error.call == "posix_spawn" && error.errno == ENOENT, "\(error)")
        }
    }
}
