import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 23 item 3: a folder tree of untagged files on the real streamd. Every file is
/// reachable from the album list (`/api/albums`, each album's tracks), from `/api/search` by
/// the names its path gives it, and its album shows in the page's grid (headless Chromium)
/// under the folder's name, with no change to the page.
@Suite(.timeLimit(.scaledMinutes(3)), .ownThreads) struct UntaggedLibraryTests {
    static let artists = ["Nina Quartet", "R.E.M.", "Sigur Rós", "坂本龍一", "The Band.Name", "AC_DC"]
    static let albums = ["Blue Hours (2001)", "Live at the B.B.C.", "Ágætis byrjun", "Two Discs"]
    static let words = ["Morning", "Évening", "Straße", "Light", "夜に駆ける", "Rain", "Drift", "Echo"]

    /// One file of the tree: where it is, and the title, track and disc its name gives.
    struct File {
        var path: String
        var title: String
        var track: Int?
        var disc: Int?
    }

    /// The file names a track number `n` and a title word take, in the shapes rippers, shops
    /// and people use (the disc is the name's or the disc folder's).
    static func name(_ shape: Int, _ n: Int, _ word: String, _ ext: String) -> (name: String, title: String, track: Int?, disc: Int?) {
        let nn = n < 10 ? "0\(n)" : "\(n)"
        switch shape % 8 {
        case 0: return ("\(nn) - \(word) Song.\(ext)", "\(word) Song", n, nil)
        case 1: return ("\(nn). \(word) Mr. Jones.\(ext)", "\(word) Mr. Jones", n, nil)
        case 2: return ("\(nn)_\(word)_part_two.\(ext)", "\(word) part two", n, nil)
        case 3: return ("\(nn) \(word).\(ext)", word, n, nil)
        case 4: return ("2-\(nn) \(word) Second Disc.\(ext)", "\(word) Second Disc", n, 2)
        case 5: return ("(\(nn)) \(word) – Bracketed.\(ext)", "\(word) – Bracketed", n, nil)
        case 6: return ("\(word) Without Number.\(ext)", "\(word) Without Number", nil, nil)
        default: return ("\(nn).\(ext)", nn, n, nil)
        }
    }

    /// Artist/Album/NN name.ext for every artist and album (the last album in CD1/CD2 folders),
    /// MP3 and WAV files without any tag, plus a folder one down and two files in the root.
    static func makeTree() throws -> (root: URL, files: [File]) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-untagged-\(getpid())-\(UUID().uuidString.prefix(8))")
        // 16 KB of a CBR MP3 without tags (frames only) and 0.2 s of 16-bit mono WAV: small and untagged.
        let mp3 = Array(try Data(contentsOf: TestPaths.media.appendingPathComponent("cbr-no-tag.mp3")).prefix(16_384))
        let wav = Self.wav(frames: 8_820)
        var files: [File] = []
        func add(_ relative: String, title: String, track: Int?, disc: Int?, ext: String) throws {
            let url = root.appendingPathComponent(relative)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(ext == "mp3" ? mp3 : wav).write(to: url)
            files.append(File(path: relative, title: title, track: track, disc: disc))
        }
        var shape = 0
        for artist in artists {
            for (a, album) in albums.enumerated() {
                for n in 1...8 {
                    shape += 1
                    let ext = shape % 3 == 0 ? "wav" : "mp3"
                    let file = name(shape, n, words[(n + a) % words.count], ext)
                    // The last album is in two disc folders; a name's own disc wins over its folder's.
                    let discFolder = a == albums.count - 1 ? (n <= 4 ? "CD1/" : "CD 2/") : ""
                    let folderDisc = discFolder.isEmpty ? nil : (n <= 4 ? 1 : 2)
                    try add("\(artist)/\(album)/\(discFolder)\(file.name)", title: file.title, track: file.track,
                            disc: file.disc ?? folderDisc, ext: ext)
                }
            }
        }
        try add("Loose Folder/03 - Lonely Song.mp3", title: "Lonely Song", track: 3, disc: nil, ext: "mp3")
        try add("07 Root Song.mp3", title: "Root Song", track: 7, disc: nil, ext: "mp3")
        try add("Root.Dotted.Name.wav", title: "Root.Dotted.Name", track: nil, disc: nil, ext: "wav")
        return (root, files)
    }

    /// A 16-bit mono 44.1 kHz WAV of `frames` samples of a quiet ramp.
    static func wav(frames: Int) -> [UInt8] {
        var out: [UInt8] = []
        func le(_ value: Int, _ bytes: Int) { for i in 0..<bytes { out.append(UInt8((value >> (8 * i)) & 0xFF)) } }
        out += Array("RIFF".utf8); le(36 + frames * 2, 4); out += Array("WAVE".utf8)
        out += Array("fmt ".utf8); le(16, 4); le(1, 2); le(1, 2); le(44_100, 4); le(88_200, 4); le(2, 2); le(16, 2)
        out += Array("data".utf8); le(frames * 2, 4)
        for i in 0..<frames { le((i % 200) * 10, 2) }
        return out
    }

    static func list(_ server: StreamdProcess, _ target: String) throws -> (items: [[String: Any]], total: String?, more: String?) {
        let response = try AnalyzerIsolationTests.get(server, target)
        guard response.status == 200 else { throw TestFailure("\(target): status \(response.status)") }
        let items = try #require(try AnalyzerIsolationTests.json(response) as? [[String: Any]], "\(target)")
        return (items, response.header("X-Total-Count"), response.header("X-More"))
    }

    /// `text` as a query value: every byte but ASCII letters and digits percent-encoded.
    static func query(_ text: String) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    @Test func everyUntaggedFile_isReachable_fromAlbumsSearchAndThePage() throws {
        let (root, files) = try Self.makeTree()
        defer { try? FileManager.default.removeItem(at: root) }
        let server = try StreamdProcess(folder: root, extraArguments: ["--quiet"])
        let status = try AnalyzerIsolationTests.status(server)
        #expect(status["tracks"] as? Int == files.count, "every file listed: \(status)")
        #expect((status["skipped"] as? [Any])?.isEmpty == true, "none skipped: \(status)")

        // Every track's item: the names its path gives, marked derived.
        let tracks = try Self.list(server, "/api/tracks?limit=1000").items
        var byPath: [String: [String: Any]] = [:]
        for item in tracks { if let path = item["path"] as? String { byPath[path] = item } }
        #expect(byPath.count == files.count)
        for file in files {
            guard let item = byPath[file.path] else {
                Issue.record("\(file.path) is not listed")
                continue
            }
            let derived = item["derived"] as? [String] ?? []
            let parts = file.path.split(separator: "/").map(String.init)
            let folders = parts.dropLast().filter { !["CD1", "CD 2"].contains($0) }
            #expect(item["title"] as? String == file.title && derived.contains("title"), "\(file.path): \(item)")
            #expect(item["track"] as? Int == file.track && item["disc"] as? Int == file.disc, "\(file.path): \(item)")
            #expect(item["album"] as? String == folders.last, "\(file.path): \(item)")
            #expect(item["artist"] as? String == (folders.count >= 2 ? folders[folders.count - 2] : nil), "\(file.path): \(item)")
            #expect(derived.contains("album") == (folders.count >= 1) && derived.contains("artist") == (folders.count >= 2),
                    "\(file.path): \(derived)")
        }

        // Reachable from the album list: every album's tracks, together, are every file in a folder.
        let albumPage = try Self.list(server, "/api/albums?limit=1000")
        let albums = albumPage.items
        #expect(albumPage.total == String(Self.artists.count * Self.albums.count + 1), "one album per folder")
        var reached: Set<String> = []
        for album in albums {
            let id = try #require(album["id"] as? Int)
            let detail = try #require(try AnalyzerIsolationTests.json(AnalyzerIsolationTests.get(server, "/api/albums/\(id)")) as? [String: Any])
            let albumTracks = try #require(detail["tracks"] as? [[String: Any]])
            #expect(albumTracks.count == album["track_count"] as? Int)
            for track in albumTracks { if let path = track["path"] as? String { reached.insert(path) } }
            let title = album["title"] as? String ?? ""
            let derived = album["derived"] as? [String] ?? []
            if title == "Loose Folder" {
                #expect(album["artist"] as? String == "Unknown Artist" && derived == ["title"], "\(album)")
            } else {
                #expect(Self.albums.contains(title) && Self.artists.contains(album["artist"] as? String ?? "")
                        && derived == ["title", "artist"], "\(album)")
            }
        }
        let inFolders = Set(files.map(\.path).filter { $0.contains("/") })
        #expect(reached == inFolders, "missing from the albums: \(inFolders.subtracting(reached).sorted().prefix(5))")

        // Reachable from search: by its title with its album and artist, and by its album alone.
        var unfound: [String] = []
        for file in files {
            let parts = file.path.split(separator: "/").map(String.init).dropLast().filter { !["CD1", "CD 2"].contains($0) }
            let text = ([file.title] + parts).joined(separator: " ")
            let found = try Self.list(server, "/api/search?limit=1000&q=" + Self.query(text)).items
            if !found.contains(where: { $0["path"] as? String == file.path }) { unfound.append("\(file.path) by '\(text)'") }
        }
        #expect(unfound.isEmpty, "\(unfound.count) not found: \(unfound.prefix(5))")
        for album in Self.albums {
            for artist in Self.artists {
                let found = try Self.list(server, "/api/search?limit=1000&q=" + Self.query(artist + " " + album))
                let wanted = files.filter { $0.path.hasPrefix(artist + "/" + album + "/") }.map(\.path)
                let paths = Set(found.items.compactMap { $0["path"] as? String })
                #expect(paths.isSuperset(of: wanted), "'\(artist) \(album)': \(wanted.count) files, found \(paths.count)")
            }
        }

        // The page: its album grid shows the folders' names as the albums and artists.
        guard let python = which("python3") else {
            Issue.record("python3 is needed for the page check")
            return
        }
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/browser/album_grid.py").path
        let result = try runCommand(python, [script, server.baseURL], timeout: 90)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "\(output) \(String(decoding: result.stderr, as: UTF8.self).suffix(2000))")
        let cards = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]], "\(output)")
        #expect(cards.count == albums.count)
        for album in albums {
            let id = album["id"] as? Int
            let card: [String: Any]? = cards.first { $0["id"] as? Int == id }
            let name = card?["name"] as? String, by = card?["by"] as? String
            #expect(name != nil && name == album["title"] as? String, "\(album): \(String(describing: card))")
            #expect(by != nil && by == album["artist"] as? String, "\(album): \(String(describing: card))")
        }
        #expect(Set(cards.compactMap { $0["name"] as? String }) == Set(Self.albums + ["Loose Folder"]))

        // A file that gains tags (written in place; inotify) is listed under its tags, nothing
        // derived, in the album they name; the folder's derived album keeps the other files.
        let retagged = try #require(files.first { $0.path.hasPrefix("Nina Quartet/Ágætis byrjun/") && $0.path.hasSuffix(".mp3") })
        try Data(contentsOf: TestPaths.media.appendingPathComponent("cbr-128k-44k.mp3"))
            .write(to: root.appendingPathComponent(retagged.path))
        try LibraryEndToEndTests.waitUntil(server, within: 10, "the tags of \(retagged.path)") { tracks in
            tracks[retagged.path]?["title"] as? String == "Chords and Melody"
        }
        let item = try #require(try LibraryEndToEndTests.tracks(server)[retagged.path])
        #expect(item["artist"] as? String == "streamd test band" && item["album"] as? String == "Generated Library"
                && item["track"] as? Int == 1 && (item["derived"] as? [String]) == [], "\(item)")
        let after = try Self.list(server, "/api/albums?limit=1000").items
        #expect(after.contains { $0["title"] as? String == "Generated Library" && ($0["derived"] as? [String]) == [] })
        let folderAlbum = after.first { $0["title"] as? String == "Ágætis byrjun" && $0["artist"] as? String == "Nina Quartet" }
        #expect(folderAlbum?["track_count"] as? Int == 7, "\(String(describing: folderAlbum))")
        #expect(try Self.list(server, "/api/search?q=chords").items.compactMap { $0["path"] as? String } == [retagged.path])
    }
}
