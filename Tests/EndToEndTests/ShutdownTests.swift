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
        let pid = server.process.processIdentifier

        // A radio listener, reading; a download paced to 8 kbit/s (minutes to go), reading.
        let listener = try RawConnection(port: server.port)
        listener.send("GET /radio/main HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = listener.readUntilEnd(quiet: 1, limit: 1)
        let download = try RawConnection(port: server.port)
        download.send("GET /media/ch/a.mp3?kbps=8 HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = download.readUntilEnd(quiet: 0.5, limit: 0.5)
        #expect(server.process.isRunning)

        let started = Date()
        kill(pid, SIGTERM)
        server.process.waitUntilExit()
        let took = Date().timeIntervalSince(started)
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0,
                "exit status \(server.process.terminationStatus)")
        #expect(took <= 5.0, "SIGTERM took \(took) s")
        // The database was checkpointed and closed: its WAL is empty (or gone).
        let wal = (try? FileManager.default.attributesOfItem(atPath: server.databasePath + "-wal")[.size] as? Int) ?? 0
        #expect(wal == 0, "WAL left with \(wal ?? -1) bytes")
        // Both clients saw their connection end.
        _ = listener.readUntilEnd(quiet: 1, limit: 2)
        _ = download.readUntilEnd(quiet: 1, limit: 2)
    }
}
