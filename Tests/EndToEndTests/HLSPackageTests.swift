import Foundation
import StreamShared
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `streamd package`: static HLS that nginx serves and ffmpeg plays like the original files.
@Suite(.serialized, .ownThreads) struct HLSPackageTests {
    /// nginx in the foreground on 127.0.0.1:port serving `root`, with every path under `prefix`;
    /// `server` replaces the server block's body (a proxy), `http` adds directives (a cache zone),
    /// and `readyPath` is what must answer 200 once it runs.
    final class Nginx {
        let process = Process()
        let port: Int

        init(root: URL, prefix: URL, http: String = "", server: String? = nil, readyPath: String = "/index.html") throws {
            let nginx = try #require(["/usr/sbin/nginx", which("nginx")].compactMap { $0 }.first {
                FileManager.default.isExecutableFile(atPath: $0)
            }, "nginx-light is installed by scripts/deps.sh")
            port = try freeLoopbackPort()
            let p = prefix.path
            let config = """
            daemon off;
            pid \(p)/nginx.pid;
            error_log \(p)/error.log;
            events { worker_connections 1024; }
            http {
                access_log \(p)/access.log;
                client_body_temp_path \(p)/body;
                proxy_temp_path \(p)/proxy;
                fastcgi_temp_path \(p)/fastcgi;
                uwsgi_temp_path \(p)/uwsgi;
                scgi_temp_path \(p)/scgi;
                types { application/vnd.apple.mpegurl m3u8; audio/mpeg mp3; audio/aac aac; audio/mp4 m4s mp4 m4a; text/html html; }
                default_type application/octet-stream;
                \(http)
                server { listen 127.0.0.1:\(port); \(server ?? "root \(root.path);") }
            }
            """
            try FileManager.default.createDirectory(at: prefix, withIntermediateDirectories: true)
            try Data(config.utf8).write(to: prefix.appendingPathComponent("nginx.conf"))
            process.executableURL = URL(fileURLWithPath: nginx)
            process.arguments = ["-p", p, "-e", "\(p)/error.log", "-c", "\(p)/nginx.conf"]
            // Our own /dev/null handle (nginx logs to files): the shared FileHandle.nullDevice is left alone.
            let devNull = FileHandle(forWritingAtPath: "/dev/null")
            process.standardOutput = devNull
            process.standardError = devNull
            try process.run()
            // Ready when it answers.
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let c = try? RawConnection(port: port), (try? c.request("GET", readyPath).status) == 200 { return }
                Thread.sleep(forTimeInterval: 0.05)
            }
            process.terminate()
            let log = (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            throw TestFailure("nginx did not start: \(log)")
        }

        var baseURL: String { "http://127.0.0.1:\(port)" }

        deinit {
            // The master process waits in sigsuspend with signals unblocked, so SIGTERM reaches it even
            // though the test thread that started it had them blocked; SIGKILL if it has not gone in 5 s.
            guard process.isRunning else { return }
            process.terminate()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func package_servedByNginx_playsInFFmpegLikeStreamd() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-pkg-\(getpid())-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: work) }
        let out = work.appendingPathComponent("out")
        let streamd = TestPaths.streamd
        let run = try runCommand(streamd, ["package", library.path, "--out", out.path, "--quiet"])
        #expect(run.status == 0, "\(String(decoding: run.stderr, as: UTF8.self))")
        #expect(String(decoding: run.stdout, as: UTF8.self).contains("packaged 10 tracks"), "every MP3, ADTS and M4A track")

        let page = try String(contentsOf: out.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(page.contains("hls/vbr-v2.mp3/master.m3u8") && page.contains("MediaSource"), "index.html plays the packages")
        #expect(page.contains("hls/Album%20%C3%9Cn%C3%AFcode/"), "URLs in the page are percent-encoded")

        // The same bytes as streamd serves (playlists differ only in streamd's ?v= version tokens).
        let server = try StreamdProcess(folder: library)
        for path in ["vbr-v2.mp3", "adts.aac", "track.m4a"] {
            let folder = out.appendingPathComponent("hls/\(path)")
            let playlist = try String(contentsOf: folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
            let (media, problems) = M3U8Rules.checkMedia(playlist, vod: true)
            #expect(problems.isEmpty, "\(path): \(problems)")
            let served = try RawConnection(port: server.port).request("GET", "/hls/\(path)/index.m3u8").body
            #expect(String(decoding: served, as: UTF8.self).replacingOccurrences(of: #"\?v=[0-9a-f]{12}"#, with: "",
                                                                                 options: .regularExpression) == playlist)
            if path != "track.m4a" {
                // The byte-range form: ranges of packed.* (the segments back to back), as streamd serves it.
                let ranges = try String(contentsOf: folder.appendingPathComponent("byterange.m3u8"), encoding: .utf8)
                let servedRanges = try RawConnection(port: server.port).request("GET", "/hls/\(path)/index.m3u8?byterange=1").body
                #expect(String(decoding: servedRanges, as: UTF8.self).replacingOccurrences(of: #"\?v=[0-9a-f]{12}"#, with: "",
                                                                                         options: .regularExpression) == ranges)
                let name = "packed." + (path.hasSuffix(".mp3") ? "mp3" : "aac")
                let packed = try Data(contentsOf: folder.appendingPathComponent(name))
                #expect(Array(packed) == (try RawConnection(port: server.port).request("GET", "/hls/\(path)/\(name)").body),
                        "\(path)/\(name) packaged = served")
            }
            for segment in media.segments.prefix(2) + (media.map.map { [M3U8Rules.Segment(duration: 0, uri: $0, discontinuity: false)] } ?? []) {
                let file = try Data(contentsOf: folder.appendingPathComponent(segment.uri))
                let live = try RawConnection(port: server.port).request("GET", "/hls/\(path)/\(segment.uri)").body
                #expect(Array(file) == live, "\(path)/\(segment.uri) packaged = served")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("hls/pcm16.wav").path), "WAV is skipped")

        // nginx serves the folder; ffmpeg decodes it like the original file.
        let nginx = try Nginx(root: out, prefix: work.appendingPathComponent("nginx"))
        for (path, playlist) in [("vbr-v2.mp3", "index.m3u8"), ("adts.aac", "master.m3u8"), ("track.m4a", "index.m3u8"),
                                 ("vbr-v2.mp3", "byterange.m3u8"), ("Album Ünïcode/01 Ça va — chanson.mp3", "master.m3u8")] {
            let reference = work.appendingPathComponent("ref.wav"), decoded = work.appendingPathComponent("nginx.wav")
            try HLSServerTests.ffmpegDecode(library.appendingPathComponent(path).path, to: reference)
            try HLSServerTests.ffmpegDecode("\(nginx.baseURL)/hls/\(HLSServerTests.encode(path))/\(playlist)", to: decoded)
            let slack = HLSServerTests.primingSlack(try HLSServerTests.indexFacts(server, path), path: path)
            let result = try HLSServerTests.compare(reference, decoded, slack: slack)
            #expect(result.ok, "nginx \(path) \(playlist): \(result.verdict)")
        }
        // The package's index.html plays every track in Chromium (native HLS or its MSE player).
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/browser/check_hls_package.py").path
        let browser = try runCommand(try #require(which("python3")), [script, nginx.baseURL], timeout: 300)
        let report = String(decoding: browser.stdout, as: UTF8.self)
        #expect(browser.status == 0, "\(report)\(String(decoding: browser.stderr, as: UTF8.self).suffix(2000))")
        #expect(report.contains("10 passed, 0 failed"), "\(report)")
        let access = (try? String(contentsOf: work.appendingPathComponent("nginx/access.log"), encoding: .utf8)) ?? ""
        #expect(access.contains("seg-1.m4s") && access.contains("/hls/vbr-v2.mp3/packed.mp3"), "ffmpeg read segments and ranges from nginx")
    }

    @Test func package_refusesAnOutputInsideTheLibrary() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let streamd = TestPaths.streamd
        let run = try runCommand(streamd, ["package", library.path, "--out", library.appendingPathComponent("hls-out").path])
        #expect(run.status == 1 && String(decoding: run.stderr, as: UTF8.self).contains("inside the music folder"))
        let missing = try runCommand(streamd, ["package", library.appendingPathComponent("nope").path, "--out", "/tmp/x"])
        #expect(missing.status == 1)
    }
}
