import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Accounts on the real streamd: `streamd user add`, Basic and session logins, signed playlist
/// links that mpv, GStreamer and VLC follow, the start-up policy, source passwords judged before
/// bodies, and TLS behind nginx with `--trusted-proxy`.
@Suite(.serialized, .ownThreads) struct AccessEndToEndTests {
    static let accounts: [(name: String, password: String, admin: Bool)] = [("alice", "alice-pw", true), ("bob", "bob pw ü", false)]

    static func basic(_ name: String, _ password: String) -> [String: String] {
        ["Authorization": "Basic " + Data("\(name):\(password)".utf8).base64EncodedString()]
    }

    static func get(_ server: StreamdProcess, _ target: String, headers: [String: String] = [:], method: String = "GET") throws -> RawResponse {
        try RawConnection(port: server.port).request(method, target, headers: headers)
    }

    @Test(.timeLimit(.scaledMinutes(3))) func accountsGuardTheLibrary_andSignedLinksPlayInGenericPlayers() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, accounts: Self.accounts)
        let bob = Self.basic("bob", "bob pw ü")

        let anonymous = try Self.get(server, "/api/tracks")
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
        #expect(try Self.get(server, "/api/tracks", headers: bob).status == 200)
        #expect(try Self.get(server, "/api/status", headers: bob).status == 403)
        #expect(try Self.get(server, "/").status == 303)
        // A wrong password and a missing user answer alike.
        let wrong = try Self.get(server, "/api/tracks", headers: Self.basic("bob", "nope"))
        let missing = try Self.get(server, "/api/tracks", headers: Self.basic("nobody", "nope"))
        #expect(wrong.status == 401 && missing.status == 401 && wrong.body == missing.body)

        // The page's login: a session cookie, then the page and the API with it.
        let login = try Self.get(server, "/api/login", headers: bob, method: "POST")
        #expect(login.status == 200)
        let cookie = try #require(login.header("Set-Cookie"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && !cookie.contains("Secure"))
        let session = ["Cookie": String(cookie.split(separator: ";")[0])]
        let page = try Self.get(server, "/", headers: session)
        #expect(page.status == 200)
        #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
        #expect(page.header("X-Content-Type-Options") == "nosniff")
        #expect(try Self.get(server, "/api/tracks", headers: session).status == 200)
        #expect(try Self.get(server, "/api/logout", headers: session, method: "POST").status == 403, "no CSRF token")

        // A signed link to the album playlist: no credentials needed, and its entries are signed too.
        let album = try #require(try LibraryAPITests.list(Self.get(server, "/api/albums?limit=1000", headers: bob))
            .first { $0["title"] as? String == "Ordered Album" })
        let path = "/playlist/album/\(try #require(album["id"] as? Int)).m3u8"
        let signed = try Self.get(server, "/api/sign?path=\(path)", headers: bob)
        #expect(signed.status == 200)
        let url = try #require((try JSONSerialization.jsonObject(with: Data(signed.body)) as? [String: Any])?["url"] as? String)
        // RawConnection's Host is "127.0.0.1" (no port): the URL names the host the request named.
        #expect(url.hasPrefix("http://127.0.0.1" + path + "?exp="))
        #expect(try Self.get(server, path).status == 401)
        let target = String(url.dropFirst("http://127.0.0.1".count))
        let playlist = try Self.get(server, target)
        #expect(playlist.status == 200)
        let entries = PlaylistPlayers.urls(in: playlist)
        #expect(entries.count == 4 && entries.allSatisfy { $0.contains("/media/") && $0.contains("&sig=") })
        #expect(try Self.get(server, target.replacingOccurrences(of: "sig=", with: "sig=0")).status == 401)
        #expect(try Self.get(server, String(entries[0].dropFirst("http://127.0.0.1".count)).replacingOccurrences(of: "uid=", with: "uid=9")).status == 401)

        // The streamed list of every track signs its links the same way.
        let all = try #require((try JSONSerialization.jsonObject(with: Data(Self.get(server, "/api/sign?path=/playlist/all.m3u8", headers: bob).body))
            as? [String: Any])?["url"] as? String)
        let allEntries = PlaylistPlayers.urls(in: try Self.get(server, String(all.dropFirst("http://127.0.0.1".count))))
        #expect(allEntries.count > 4 && allEntries.allSatisfy { $0.contains("&sig=") })
        #expect(try Self.get(server, String(allEntries[allEntries.count - 1].dropFirst("http://127.0.0.1".count))).status == 200)
        let playerURL = server.baseURL + target
        let mpv = try PlaylistPlayers.mpv(playerURL)
        #expect(mpv.status == 0, "\(mpv.output.suffix(2000))")
        // The players fetch through the real port, so the entries they play name it.
        #expect(mpv.played.count == 4 && mpv.played.allSatisfy { $0.hasPrefix(server.baseURL + "/media/") && $0.contains("&sig=") },
                "\(mpv.output.suffix(2000))")
        let vlcEntries = mpv.played
        let gst = try #require(which("gst-launch-1.0"))
        let gstRun = try runCommand(gst, ["-q", "souphttpsrc", "location=\(mpv.played.first ?? "")", "!", "decodebin", "!", "fakesink"], timeout: 60)
        #expect(gstRun.status == 0, "\(String(decoding: gstRun.stderr, as: UTF8.self).suffix(800))")
        let vlc = try PlaylistPlayers.vlc(playerURL)
        // Each fetch of the playlist signs its links anew (the expiry may move by a second): compare paths.
        func bare(_ urls: [String]) -> [String] { urls.map { String($0.split(separator: "?").first ?? "") } }
        #expect(bare(vlc.played) == bare([playerURL] + vlcEntries), "\(vlc.output.suffix(3000))")
        #expect(vlc.played.dropFirst().allSatisfy { $0.contains("&sig=") })

        // Signatures and passwords never reach the log.
        server.stop()
        let log = server.log
        #expect(log.contains("sig=-"))
        #expect(!log.contains(String(url.split(separator: "=").last ?? "x")))
        #expect(!log.contains("bob pw"))
        #expect(log.contains("failed login as 'bob'"))
    }

    /// A signed link to an HLS master playlist: the media playlist it names, and every segment
    /// in that, come signed for the same user, so ffmpeg, mpv and GStreamer play it without
    /// logging in; the same URIs unsigned, or with a signature changed, are refused.
    @Test(.timeLimit(.scaledMinutes(3))) func signedHLSLinks_signTheirSegments() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, accounts: Self.accounts)
        defer { _ = server.stop() }
        let bob = Self.basic("bob", "bob pw ü")
        let directory = "/hls/cbr-128k-44k.mp3/"
        #expect(try Self.get(server, directory + "master.m3u8").status == 401)
        let signed = try Self.get(server, "/api/sign?path=\(directory)master.m3u8", headers: bob)
        #expect(signed.status == 200)
        let url = try #require((try JSONSerialization.jsonObject(with: Data(signed.body)) as? [String: Any])?["url"] as? String)
        func uris(_ response: RawResponse) -> [String] {
            String(decoding: response.body, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        }
        let master = try Self.get(server, String(url.dropFirst("http://127.0.0.1".count)))
        #expect(master.status == 200)
        let variant = try #require(uris(master).first)
        #expect(variant.hasPrefix("index.m3u8?exp=") && variant.contains("&sig="), "\(variant)")
        // The transcoded variants of the ladder come signed too.
        let ladder = uris(master).dropFirst()
        #expect(!ladder.isEmpty && ladder.allSatisfy { $0.contains("/index.m3u8?exp=") && $0.contains("&sig=") }, "\(ladder)")
        #expect(try Self.get(server, directory + "index.m3u8").status == 401)
        let media = try Self.get(server, directory + variant)
        #expect(media.status == 200)
        let segments = uris(media)
        #expect(!segments.isEmpty && segments.allSatisfy { $0.hasPrefix("seg-") && $0.contains("?v=") && $0.contains("&sig=") }, "\(segments)")
        let first = try #require(segments.first)
        #expect(try Self.get(server, directory + first).status == 200)
        #expect(try Self.get(server, directory + String(first.split(separator: "?")[0])).status == 401)
        #expect(try Self.get(server, directory + first.replacingOccurrences(of: "sig=", with: "sig=0")).status == 401)
        // A segment's signature is for its own path only.
        if segments.count > 1 {
            let other = String(segments[1].split(separator: "?")[0]) + "?" + String(first.split(separator: "?")[1])
            #expect(try Self.get(server, directory + other).status == 401)
        }
        // Each signed variant playlist answers (its encode finished: VOD), so GStreamer's playbin,
        // which starts on the original and switches up to a variant, meets no EVENT playlist:
        // switching into one it stalls for good (DESIGN, HLS renditions), which is not what this
        // test is about. A cold variant's playlist holds VOD only for an encode that will end
        // within a second, which a loaded debug build may miss.
        for variant in ladder {
            let deadline = Date().addingTimeInterval(TestTiming.seconds(60))
            while true {
                let answer = try HLSServerTests.get(server, directory + variant)
                if answer.status == 200, HLSServerTests.text(answer).contains("#EXT-X-ENDLIST") { break }
                guard Date() < deadline else {
                    let transcodes = server.log.split(separator: "\n").filter { $0.contains("transcode") }.suffix(20)
                    throw TestFailure("\(variant) never became VOD: \(answer.status)\n\(transcodes.joined(separator: "\n"))")
                }
                // An EVENT reload answers at once: a player's reload interval, shortened.
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        // Generic players follow the signed master through to the segments.
        let playerURL = server.baseURL + String(url.dropFirst("http://127.0.0.1".count))
        // ffmpeg decodes every segment: as many samples as the file itself gives it, within two
        // frames (the segments keep the encoder delay and padding the file's LAME header trims).
        let ffmpegPath = try #require(which("ffmpeg"))
        let pcm = ["-nostdin", "-v", "error", "-f", "s16le", "-ac", "2", "-ar", "44100", "-"]
        let overHLS = try runCommand(ffmpegPath, ["-i", playerURL] + pcm, timeout: 60)
        let local = try runCommand(ffmpegPath, ["-i", library.appendingPathComponent("cbr-128k-44k.mp3").path] + pcm, timeout: 60)
        #expect(overHLS.status == 0 && !local.stdout.isEmpty && abs(overHLS.stdout.count - local.stdout.count) <= 2 * 1152 * 4,
                "\(overHLS.stdout.count) bytes over HLS, \(local.stdout.count) from the file: \(String(decoding: overHLS.stderr, as: UTF8.self).suffix(800))")
        let mpv = try PlaylistPlayers.mpv(playerURL)
        #expect(mpv.status == 0 && mpv.played.count == 1, "\(mpv.output.suffix(2000))")
        let gst = try runCommand(try #require(which("gst-launch-1.0")),
                                 ["-q", "playbin", "uri=\(playerURL)", "audio-sink=fakesink", "video-sink=fakesink"], timeout: 60)
        #expect(gst.status == 0, "\(String(decoding: gst.stderr, as: UTF8.self).suffix(800))")
    }

    @Test func withoutAccounts_aNetworkAddressNeedsPublic() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let db = library.appendingPathComponent(".state/catalog.db").path
        let refused = try runCommand(TestPaths.streamd, [library.path, "--host", "0.0.0.0", "--port", "0", "--db", db, "--quiet"], timeout: 30)
        #expect(refused.status != 0)
        #expect(String(decoding: refused.stderr, as: UTF8.self).contains("--public"))
        // With --public it starts (anonymous read-only; no status page without an admin).
        let server = try StreamdProcess(folder: library, extraArguments: ["--public", "--db", db], waitForScan: false)
        #expect(try Self.get(server, "/api/tracks").status == 200)
        #expect(try Self.get(server, "/api/status").status == 401)
        // Loopback without accounts: open, as before accounts.
        let open = try StreamdProcess(folder: library, waitForScan: false)
        #expect(try Self.get(open, "/api/status").status == 200)
    }

    /// Issue 25's hardening: a source's credentials are judged before its body; `curl -T file`
    /// (Content-Length) is taken with the right password and read to its length.
    @Test(.timeLimit(.scaledMinutes(2))) func sourceCredentialsComeBeforeTheBody() throws {
        try RadioSourceTests.withServer { server, file in
            let wrong = try RawConnection(port: server.port)
            let auth = Data("source:nope".utf8).base64EncodedString()
            wrong.send("PUT /radio/live HTTP/1.1\r\nHost: x\r\nAuthorization: Basic \(auth)\r\nContent-Type: audio/mpeg\r\nContent-Length: 100000\r\n\r\n")
            #expect(wrong.readSizedResponse()?.status == 401)
            let curl = try #require(which("curl"))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
            let upload = try runCommand(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_upload}", "-T", file.path,
                                               "-u", "source:\(RadioSourceTests.password)", "-H", "Content-Type: audio/mpeg",
                                               "\(server.baseURL)/radio/sized"], timeout: 60)
            let answer = String(decoding: upload.stdout, as: UTF8.self)
            #expect(upload.status == 0 && answer == "200 \(size)", "curl -T: \(answer), exit \(upload.status)")
        }
    }

    /// streamplay logs in with `--user` (password on stdin) or a `~/.netrc` entry, and is refused without.
    @Test(.timeLimit(.scaledMinutes(2))) func streamplayLogsIn() throws {
        let library = try ServerEndToEndTests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, accounts: Self.accounts)
        let streamplay = TestPaths.binDir.appendingPathComponent("streamplay").path
        let url = "\(server.baseURL)/media/cbr-128k-44k.mp3"
        func play(_ arguments: [String], stdin: String = "", home: String? = nil) throws -> (Int32, String) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: streamplay)
            process.arguments = ["--output", "null", "--duration", "0.5"] + arguments + [url]
            var environment = ProcessInfo.processInfo.environment
            if let home { environment["HOME"] = home }
            process.environment = environment
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            try process.run()
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
            let text = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: text, as: UTF8.self))
        }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("streamplay-home-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let refused = try play([], home: home.path)
        #expect(refused.0 != 0 && refused.1.contains("401"), "\(refused)")
        let withUser = try play(["--user", "bob"], stdin: "bob pw ü\n", home: home.path)
        #expect(withUser.0 == 0, "\(withUser)")
        try Data("machine example.org login bob password x\nmachine 127.0.0.1\n  login alice\n  password alice-pw\nmachine 127.0.0.1 login bob password wrong\n".utf8)
            .write(to: home.appendingPathComponent(".netrc"))
        let fromNetrc = try play([], home: home.path)
        #expect(fromNetrc.0 == 0, "\(fromNetrc)")
    }

    /// TLS behind nginx: nginx terminates TLS (a certificate openssl makes here) and forwards
    /// `X-Forwarded-Proto` from 127.0.0.2, the one `--trusted-proxy`; the session cookie is then
    /// Secure and playlist links https. The same headers sent straight to streamd count for nothing.
    @Test(.timeLimit(.scaledMinutes(2))) func behindNginxWithTLS() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--trusted-proxy", "127.0.0.2"], accounts: Self.accounts)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let openssl = try #require(which("openssl"))
        let cert = work.appendingPathComponent("cert.pem").path, key = work.appendingPathComponent("key.pem").path
        let made = try runCommand(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                                            "-days", "1", "-subj", "/CN=127.0.0.1"], timeout: 60)
        #expect(made.status == 0)
        let nginx = try #require(["/usr/sbin/nginx", which("nginx")].compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) })
        let port = try freeLoopbackPort()
        let p = work.path
        let config = """
        daemon off;
        pid \(p)/nginx.pid;
        error_log \(p)/error.log;
        events { worker_connections 64; }
        http {
            access_log \(p)/access.log;
            client_body_temp_path \(p)/body; proxy_temp_path \(p)/proxy; fastcgi_temp_path \(p)/fastcgi;
            uwsgi_temp_path \(p)/uwsgi; scgi_temp_path \(p)/scgi;
            server {
                listen 127.0.0.1:\(port) ssl;
                ssl_certificate \(cert);
                ssl_certificate_key \(key);
                location / {
                    proxy_pass http://127.0.0.1:\(server.port);
                    proxy_bind 127.0.0.2;
                    proxy_http_version 1.1;
                    proxy_buffering off;
                    proxy_set_header Host $http_host;
                    proxy_set_header X-Forwarded-Proto $scheme;
                    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
                }
            }
        }
        """
        try Data(config.utf8).write(to: work.appendingPathComponent("nginx.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", p, "-e", "\(p)/error.log", "-c", "\(p)/nginx.conf"]
        let devNull = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = devNull
        process.standardError = devNull
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let curl = try #require(which("curl"))
        let base = "https://127.0.0.1:\(port)"
        func curlHead(_ arguments: [String]) throws -> String {
            String(decoding: try runCommand(curl, ["-sk", "-D", "-", "-o", "/dev/null"] + arguments, timeout: 30).stdout, as: UTF8.self)
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !(try curlHead([base + "/login"])).hasPrefix("HTTP/1.1 200") { Thread.sleep(forTimeInterval: 0.05) }
        let viaProxy = try curlHead(["-X", "POST", "-u", "bob:bob pw ü", base + "/api/login"])
        #expect(viaProxy.hasPrefix("HTTP/1.1 200"), "\(viaProxy)")
        #expect(viaProxy.contains("Secure"), "\(viaProxy)")
        let album = try #require(try LibraryAPITests.list(Self.get(server, "/api/albums?limit=1000", headers: Self.basic("bob", "bob pw ü")))
            .first { $0["title"] as? String == "Ordered Album" })
        let path = "/playlist/album/\(try #require(album["id"] as? Int)).m3u8"
        let playlist = String(decoding: try runCommand(curl, ["-sk", "-u", "bob:bob pw ü", base + path], timeout: 30).stdout, as: UTF8.self)
        #expect(playlist.contains("\n" + base + "/media/"), "\(playlist)")
        // Straight to streamd, the same forwarded header is dropped: no Secure, plain http links.
        let direct = try curlHead(["-X", "POST", "-u", "bob:bob pw ü", "-H", "X-Forwarded-Proto: https", server.baseURL + "/api/login"])
        #expect(direct.hasPrefix("HTTP/1.1 200") && !direct.contains("Secure"), "\(direct)")
    }
}
