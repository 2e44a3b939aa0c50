import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 22 item 2: SIGTERM stops everything streamd started, in order, and exits 0 within 5 s,
/// even with a radio listener and a slow download open.
@Suite(.ownThreads) struct ShutdownTests {
    @Test(.timeLimit(.scaledMinutes(2))) func sigterm_withAListenerAndASlowDownload_exits0Within5s() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch"])
        defer { _ = server.stop() }

        // A radio listener, reading; a download paced to 8 kbit/s (minutes to go), reading.
        let listener = try RawConnection(port: server.port)
        listener.send("GET /radio/main HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = listener.readUntilEnd(quiet: 1, limit: 1)
        let download = try RawConnection(port: server.port)
        download.send("GET /media/ch/a.mp3?kbps=8 HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = download.readUntilEnd(quiet: 0.5, limit: 0.5)
        #expect(server.process.isRunning)

        Self.expectCleanExit(server)
        // The database was checkpointed and closed: its WAL is empty (or gone).
        let wal = (try? FileManager.default.attributesOfItem(atPath: server.databasePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "WAL left with \(wal) bytes")
        // Both clients saw their connection end.
        _ = listener.readUntilEnd(quiet: 1, limit: 2)
        _ = download.readUntilEnd(quiet: 1, limit: 2)
    }

    /// Everything the lifecycle owns at once: a transcoding channel (its decode worker) with a
    /// listener, a `--live` loop with an HLS client, a paced download, and a seek-index request
    /// whose analysis worker hangs (a blocking-pool job past the deadline). SIGTERM: exit 0 within
    /// 5 s, the hung job named in the log, every child process reaped, the WAL checkpointed.
    @Test(.timeLimit(.scaledMinutes(2))) func sigterm_withRadioLiveHLSAndAHungPoolJob_reapsEveryChild_exits0Within5s() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        try FileManager.default.copyItem(at: library.appendingPathComponent("ch/a.mp3"), to: library.appendingPathComponent("slow.mp3"))
        let server = try StreamdProcess(folder: library,
                                        extraArguments: ["--quiet", "--channel", "main=ch,bitrate=64", "--analyze-timeout", "60",
                                                         "--live", "loop=\(library.path)/ch/b.mp3"],
                                        analyzerFault: "walkhang:slow.mp3")
        defer { _ = server.stop() }
        let pid = server.process.processIdentifier

        let listener = try RawConnection(port: server.port)
        listener.send("GET /radio/main HTTP/1.1\r\nHost: x\r\n\r\n")
        let (heard, _) = listener.readUntilEnd(quiet: 1, limit: 1)
        #expect(heard.count > 1000, "the listener hears the channel")
        let live = try RawConnection(port: server.port)
        live.send("GET /live/loop/index.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n")
        let (playlist, _) = live.readUntilEnd(quiet: 0.5, limit: 1)
        #expect(String(decoding: playlist, as: UTF8.self).contains("#EXTINF"), "the live playlist is served")
        live.send("GET /live/loop/seg-0.mp3 HTTP/1.1\r\nHost: x\r\n\r\n")
        let download = try RawConnection(port: server.port)
        download.send("GET /media/ch/a.mp3?kbps=8 HTTP/1.1\r\nHost: x\r\n\r\n")
        let hung = try RawConnection(port: server.port)
        hung.send("GET /api/index/slow.mp3 HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = download.readUntilEnd(quiet: 0.5, limit: 0.5)
        let children = Self.children(of: pid)
        #expect(children.count >= 2, "a decode worker and the hung analyzer worker run: \(children)")
        #expect(server.process.isRunning)

        Self.expectCleanExit(server, childrenSeen: children)
        let wal = (try? FileManager.default.attributesOfItem(atPath: server.databasePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "WAL left with \(wal) bytes")
        _ = server.stop()
        let log = server.log
        #expect(log.contains("blocking jobs still running at the deadline, left: GET /api/index/slow.mp3"), "\(log)")
        #expect(!log.contains("did not stop"), "every thread stopped in time: \(log)")
        for connection in [listener, live, download, hung] { _ = connection.readUntilEnd(quiet: 1, limit: 2) }
    }

    /// A transcoding channel whose decode worker hangs: the producer waits for samples (up to
    /// 10 s a unit). SIGTERM ends that wait within a quarter of a second: the worker is killed
    /// and reaped, the producer joined, and streamd exits 0 within 5 s.
    @Test(.timeLimit(.scaledMinutes(2))) func sigterm_whileADecodeWorkerHangs_joinsTheProducer_reapsTheWorker() throws {
        let library = try RadioEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        // The 64 KiB burst is 8 s at 64 kbit/s: the pre-roll reaches b.mp3, whose worker hangs.
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet", "--channel", "main=ch,bitrate=64"],
                                        decoderFault: "hang:b.mp3")
        defer { _ = server.stop() }
        let pid = server.process.processIdentifier
        var children = Self.children(of: pid)
        let waitUntil = Date().addingTimeInterval(10)
        while children.isEmpty && Date() < waitUntil {
            usleep(50_000)
            children = Self.children(of: pid)
        }
        #expect(!children.isEmpty, "a decode worker runs")
        Thread.sleep(forTimeInterval: 1)   // b.mp3's worker has sent its first samples and spins

        Self.expectCleanExit(server, childrenSeen: children)
        _ = server.stop()
        #expect(!server.log.contains("did not stop"), "the producer stopped in time: \(server.log)")
        #expect(!server.log.contains("killing"), "no worker was left for the last resort: \(server.log)")
    }

    /// The pids whose parent is `parent` (/proc/PID/stat: "pid (comm) state ppid ...").
    /// Sends streamd SIGTERM and watches it go: it exits 0 within 5 s, and every child process
    /// seen until then (`seen` and any started meanwhile) is gone with it, reaped, not orphaned.
    static func expectCleanExit(_ server: StreamdProcess, childrenSeen seen: Set<pid_t> = [],
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let pid = server.process.processIdentifier
        var children = seen
        let started = Date()
        kill(pid, SIGTERM)
        while server.process.isRunning {
            children.formUnion(Self.children(of: pid))
            usleep(10_000)
        }
        server.process.waitUntilExit()
        let took = Date().timeIntervalSince(started)
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0,
                "exit status \(server.process.terminationStatus)", sourceLocation: sourceLocation)
        #expect(took <= 5.0, "SIGTERM took \(took) s", sourceLocation: sourceLocation)
        let alive = children.filter { Self.isAlive($0) }
        #expect(alive.isEmpty, "child processes left running after streamd exited: \(alive)", sourceLocation: sourceLocation)
    }

    static func children(of parent: pid_t) -> Set<pid_t> {
        var found: Set<pid_t> = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let fields = statFields(pid), fields.count > 1, pid_t(fields[1]) == parent else { continue }
            found.insert(pid)
        }
        return found
    }

    /// Whether `pid` exists and is not a zombie (a zombie is dead, waiting for a parent's wait).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let fields = statFields(pid) else { return false }
        return fields.first != "Z"
    }

    /// The fields of /proc/PID/stat after the command name: state, ppid, ...
    static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
