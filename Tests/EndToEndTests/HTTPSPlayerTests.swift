import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// https:// through libcurl, loaded only when used: a loopback TLS server (`openssl s_server
/// -WWW` with a certificate made here, trusted through `--ca-file`) plays bit for bit; a
/// libcurl that cannot be loaded is a clear error, and http:// and `--help` never map libcurl.
@Suite(.serialized, .ownThreads) struct HTTPSPlayerTests {
    /// `openssl s_server -WWW` serving `folder` on a loopback port, with a self-signed certificate.
    final class TLSServer {
        let process: Process
        let port: Int
        let certificate: String

        init(folder: URL) throws {
            let openssl = try #require(which("openssl"), "openssl (scripts/deps.sh installs it)")
            certificate = folder.appendingPathComponent("cert.pem").path
            let key = folder.appendingPathComponent("key.pem").path
            try runCommand(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                     "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
            // A free port (s_server buffers its "ACCEPT host:port" line in a pipe, so the port is
            // chosen here and the server is ready once it accepts a connection).
            let port = try freeLoopbackPort()
            process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-WWW", "-quiet"]
            process.currentDirectoryURL = folder
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            var ready = false
            for _ in 0..<100 {
                if let fd = (try? connectLoopback(port: port)) {
                    close(fd)
                    ready = true
                    break
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            guard ready else {
                kill(process.processIdentifier, SIGKILL)
                throw TestFailure("openssl s_server did not listen on port \(port)")
            }
            self.port = port
        }

        /// SIGKILL: s_server does not end on SIGTERM while it waits in accept.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test(.timeLimit(.scaledMinutes(5))) func httpsLoopback_playsBitExact() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3")
        try FileManager.default.copyItem(at: file, to: dir.appendingPathComponent("song.mp3"))
        let server = try TLSServer(folder: dir)
        defer { server.stop() }
        let ours = dir.appendingPathComponent("ours.wav").path
        let reference = dir.appendingPathComponent("ref.wav").path
        let run = try runCommand(PlayerTests.streamplay, ["https://127.0.0.1:\(server.port)/song.mp3", "--ca-file", server.certificate,
                                                          "--output", "wav:\(ours)"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        try runCommand(try #require(which("mpg123")), ["-q", "-w", reference, file.path])
        #expect(try wavSamples(ours) == wavSamples(reference), "https playback is bit for bit")
    }

    @Test func httpsWithoutTheCA_isRefused() throws {
        let dir = try PlayerTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("x".utf8).write(to: dir.appendingPathComponent("song.mp3"))
        let server = try TLSServer(folder: dir)
        defer { server.stop() }
        let run = try runCommand(PlayerTests.streamplay, ["https://127.0.0.1:\(server.port)/song.mp3", "--output", "null",
                                                          "--retry-for", "1"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "\(stderr)")
        #expect(stderr.lowercased().contains("certificate"), "\(stderr)")
    }

    @Test func missingLibcurl_isAClearError() throws {
        let run = try runCommand("/usr/bin/env", ["STREAMPLAY_LIBCURL=/nonexistent/libcurl.so.4", PlayerTests.streamplay,
                                                  "https://127.0.0.1:9/x.mp3", "--output", "null"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status == 3, "\(stderr)")
        #expect(stderr.contains("https:// needs libcurl, which could not be loaded"), "\(stderr)")
    }

    /// The shared libraries a process has mapped, from /proc/PID/maps.
    static func mappedLibraries(_ pid: Int32) -> String {
        // procfs files report size 0: read them to their end, not by their size.
        guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/maps") else { return "" }
        defer { try? handle.close() }
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    }

    @Test func httpPlayback_andHelp_neverMapLibcurlOrLibasound() throws {
        let server = try StreamdProcess(folder: TestPaths.media, extraArguments: ["--quiet"])
        // --realtime keeps the player running long enough to read its mappings mid-stream.
        let player = Process()
        player.executableURL = URL(fileURLWithPath: PlayerTests.streamplay)
        player.arguments = ["\(server.baseURL)/media/cbr-128k-44k.mp3", "--output", "null", "--realtime", "--duration", "3"]
        player.standardOutput = FileHandle.nullDevice
        player.standardError = FileHandle.nullDevice
        try player.run()
        defer { player.terminate(); player.waitUntilExit() }
        var maps = ""
        for _ in 0..<50 {
            Thread.sleep(forTimeInterval: 0.1)
            maps = Self.mappedLibraries(player.processIdentifier)
            if maps.contains("libmpg123") { break }
        }
        #expect(maps.contains("libmpg123"), "the player is decoding")
        #expect(!maps.contains("libcurl"), "http:// maps no libcurl")
        #expect(!maps.contains("libasound"), "--output null maps no libasound")
        let help = try runCommand(try #require(which("ldd")), [PlayerTests.streamplay])
        let linked = String(decoding: help.stdout, as: UTF8.self)
        #expect(!linked.contains("libcurl") && !linked.contains("libasound"), "streamplay links neither: \(linked)")
    }
}
