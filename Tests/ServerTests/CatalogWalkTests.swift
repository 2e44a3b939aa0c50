#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

/// The scan's walk in path order merged with the catalog's known files: what is read, what is
/// gone, in SQLite's byte order, without either side held whole.
@Suite struct CatalogWalkTests {
    /// A folder whose names sort differently as names and as paths (`a.mp3` < `a/…` < `a0.mp3`),
    /// with upper case, non-ASCII, a hidden folder and links inside the library.
    static func makeFolder() throws -> URL {
        let root = try LibraryStoreTests.temporaryFolder()
        for path in ["a.mp3", "a/x.mp3", "a/y.mp3", "a b.mp3", "a0.mp3", "B.mp3", "é.mp3", "Z/z.mp3", "Z/deep/w.mp3", ".hidden/h.mp3"] {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(path.utf8).write(to: url)
        }
        try FileManager.default.createSymbolicLink(atPath: root.path + "/link.mp3", withDestinationPath: root.path + "/a/x.mp3")
        try FileManager.default.createSymbolicLink(atPath: root.path + "/linked", withDestinationPath: root.path + "/Z")
        try FileManager.default.createSymbolicLink(atPath: root.path + "/outside.mp3", withDestinationPath: "/etc/hostname")
        return root
    }

    static func stamp(_ root: URL, _ path: String) -> FileStamp {
        var info = stat()
        _ = stat(root.path + "/" + path, &info)
        return Catalog.stamp(info)
    }

    /// Runs one walk; `read` records the chunks and files them as skipped (what the catalog
    /// writes), so the strays' check at the end sees them.
    static func walk(_ root: URL, _ store: LibraryStore, under prefix: String? = nil, chunkSize: Int = 2)
        -> (read: [[String]], removed: [String], walk: CatalogWalk) {
        var chunks: [[String]] = []
        let walk = CatalogWalk(root: root.path, excludedPrefix: nil, store: store, under: prefix, chunkSize: chunkSize,
                               read: { chunk in
                                   chunks.append(chunk.map(\.path))
                                   try? store.apply(chunk.map { .skipped(path: $0.path, stamp: $0.stamp, reason: "test", quarantined: false) })
                               }, progress: { _, _, _ in })
        let removed = prefix.map { walk.scan(relative: $0) } ?? walk.scanAll()
        return (chunks, removed, walk)
    }

    @Test func firstScan_readsEveryFileOnce_inByteOrder() throws {
        let root = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try LibraryStore(path: ":memory:", folder: root.path)
        let result = Self.walk(root, store)
        let expected = ["B.mp3", "Z/deep/w.mp3", "Z/z.mp3", "a b.mp3", "a.mp3", "a/x.mp3", "a/y.mp3", "a0.mp3", "é.mp3"]
        #expect(result.read.joined().map { $0 } == expected, "byte order, each once (the links lead to files already walked)")
        #expect(result.read.allSatisfy { $0.count <= 2 }, "chunks of chunkSize")
        #expect(result.removed.isEmpty && result.walk.found == 9 && result.walk.toRead == 9)
        #expect(Set(result.walk.folders) == Set([root.path, root.path + "/Z", root.path + "/Z/deep", root.path + "/a"]))
        #expect(expected == expected.sorted { CatalogWalk.precedes($0, $1) })
    }

    @Test func rescan_readsOnlyChangedAndNew_andNamesTheGone() throws {
        let root = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try LibraryStore(path: ":memory:", folder: root.path)
        _ = Self.walk(root, store)
        // Known but gone (before, between and after the walked files), one changed, one new.
        try store.apply([.skipped(path: "0gone.mp3", stamp: FileStamp(size: 1, mtimeNanos: 1, inode: 1), reason: "t", quarantined: false),
                         .skipped(path: "a/gone.mp3", stamp: FileStamp(size: 1, mtimeNanos: 1, inode: 1), reason: "t", quarantined: false),
                         .skipped(path: "zz/gone.mp3", stamp: FileStamp(size: 1, mtimeNanos: 1, inode: 1), reason: "t", quarantined: false)])
        try Data("longer now".utf8).write(to: root.appendingPathComponent("a/y.mp3"))
        try Data("new".utf8).write(to: root.appendingPathComponent("a/new.mp3"))
        let result = Self.walk(root, store, chunkSize: 100)
        #expect(result.read == [["a/new.mp3", "a/y.mp3"]])
        #expect(result.removed == ["0gone.mp3", "a/gone.mp3", "zz/gone.mp3"])
        #expect(result.walk.found == 10 && result.walk.toRead == 2)
        let again = Self.walk(root, store)
        #expect(again.read.isEmpty && again.removed == ["0gone.mp3", "a/gone.mp3", "zz/gone.mp3"], "removal is the caller's write")
    }

    @Test func onePath_onlyThatFolderOrFile() throws {
        let root = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try LibraryStore(path: ":memory:", folder: root.path)
        _ = Self.walk(root, store)
        try FileManager.default.removeItem(at: root.appendingPathComponent("a/x.mp3"))
        try Data("changed".utf8).write(to: root.appendingPathComponent("a.mp3"))
        let folder = Self.walk(root, store, under: "a")
        #expect(folder.read.isEmpty && folder.removed == ["a/x.mp3"], "a.mp3 and a0.mp3 are not under a/")
        let file = Self.walk(root, store, under: "a.mp3")
        #expect(file.read == [["a.mp3"]] && file.removed.isEmpty)
        let gone = Self.walk(root, store, under: "B.mp3")
        #expect(gone.read.isEmpty && gone.removed.isEmpty)
        try FileManager.default.removeItem(at: root.appendingPathComponent("B.mp3"))
        #expect(Self.walk(root, store, under: "B.mp3").removed == ["B.mp3"])
    }

    /// What a link leads to is filed under its own path, out of the walk's order: compared one
    /// by one at the end, read when changed, never counted gone.
    @Test func linkedFolder_isComparedUnderItsOwnPaths() throws {
        let root = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try LibraryStore(path: ":memory:", folder: root.path)
        _ = Self.walk(root, store)
        let unchanged = Self.walk(root, store, under: "linked")
        #expect(unchanged.read.isEmpty && unchanged.removed.isEmpty)
        #expect(Set(unchanged.walk.folders) == Set([root.path + "/Z", root.path + "/Z/deep"]), "the real folders, for the watcher")
        try Data("changed".utf8).write(to: root.appendingPathComponent("Z/z.mp3"))
        let changed = Self.walk(root, store, under: "linked")
        #expect(changed.read == [["Z/z.mp3"]] && changed.removed.isEmpty)
        #expect(Self.walk(root, store, under: "link.mp3").read.isEmpty)
        #expect(Self.walk(root, store, under: "outside.mp3").read.isEmpty, "a link out of the library is not followed")
    }

    @Test func knownFiles_pagedInByteOrder_acrossBothTables() throws {
        let store = try LibraryStore(path: ":memory:", folder: "/music")
        let paths = (0..<50).map { String(format: "f%02d.mp3", $0) } + ["É.mp3", "Z.mp3", "z.mp3"]
        try store.apply(paths.enumerated().map { n, path in
            n % 3 == 0 ? .skipped(path: path, stamp: LibraryStoreTests.stamp(n), reason: "t", quarantined: false)
                       : .track(path: path, stamp: LibraryStoreTests.stamp(n), analysis: LibraryStoreTests.analysis(title: path))
        })
        var seen: [String] = []
        var after = ""
        for _ in 0..<100 {
            let batch = try store.stamps(after: after, under: nil, limit: 7)
            seen += batch.map(\.path)
            guard batch.count == 7, let last = batch.last else { break }
            after = last.path
        }
        #expect(seen == paths.sorted { CatalogWalk.precedes($0, $1) })
        #expect(try store.stamps(after: "", under: "f0", limit: 100).isEmpty, "a file prefix is not a folder")
    }
}
