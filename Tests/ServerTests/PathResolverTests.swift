import Foundation
import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

/// `PathResolver`: the one gate between a URL path and the library's files.
@Suite struct PathResolverTests {
    /// The definitions the byte-scanning checks replaced, kept here as their reference.
    static func referenceIsSafe(_ path: String) -> Bool {
        guard !path.isEmpty, !path.utf8.contains(0), !path.utf8.contains(UInt8(ascii: "\\")) else { return false }
        return !path.split(separator: "/", omittingEmptySubsequences: false).contains { $0.isEmpty || $0 == "." || $0 == ".." }
    }

    static func referenceIsHidden(_ path: String) -> Bool {
        path.split(separator: "/").contains { $0.hasPrefix(".") }
    }

    /// Every string of up to 6 symbols from an alphabet of the bytes that matter.
    static func allStrings() -> [String] {
        let alphabet = ["a", ".", "/", "\\", "\u{0}", "é"]
        var all = [""], layer = [""]
        for _ in 0..<6 {
            layer = layer.flatMap { prefix in alphabet.map { prefix + $0 } }
            all += layer
        }
        return all
    }

    @Test func safeAndHiddenChecks_agreeWithTheirReference() {
        var checked = 0
        for path in Self.allStrings() {
            #expect(PathResolver.isSafeRelativePath(path) == Self.referenceIsSafe(path), "isSafe(\(path.debugDescription))")
            #expect(PathResolver.isHidden(path) == Self.referenceIsHidden(path), "isHidden(\(path.debugDescription))")
            checked += 1
        }
        #expect(checked == 55_987)
    }

    /// A library with files, a hidden folder, symlinks in and out, and a secret outside it.
    static func makeFolder() throws -> (root: URL, outside: URL) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("resolver-\(UUID().uuidString.prefix(8))")
        let root = base.appendingPathComponent("library")
        let fm = FileManager.default
        try fm.createDirectory(at: root.appendingPathComponent("Album One"), withIntermediateDirectories: true)
        try fm.createDirectory(at: root.appendingPathComponent(".hidden"), withIntermediateDirectories: true)
        try Data("one".utf8).write(to: root.appendingPathComponent("Album One/01 intro.mp3"))
        try Data("top".utf8).write(to: root.appendingPathComponent("top.mp3"))
        try Data("dot".utf8).write(to: root.appendingPathComponent(".hidden/secret.mp3"))
        try Data("secret".utf8).write(to: base.appendingPathComponent("outside.mp3"))
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("link-in.mp3").path, withDestinationPath: "top.mp3")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("link-abs-in.mp3").path,
                                  withDestinationPath: root.appendingPathComponent("top.mp3").path)
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("link-out.mp3").path, withDestinationPath: "../outside.mp3")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("link-hidden.mp3").path,
                                  withDestinationPath: ".hidden/secret.mp3")
        try fm.createSymbolicLink(atPath: root.appendingPathComponent("Linked Album").path, withDestinationPath: "Album One")
        return (root, base)
    }

    /// What `open(encoded:)` gives: the absolute path and the file's bytes, or the error.
    static func open(_ resolver: PathResolver, _ encoded: String) -> Result<(String, [UInt8]), PathError> {
        do {
            let (path, file) = try resolver.open(encoded: Substring(encoded))
            return .success((path, (try? file.read(at: 0, count: 100)) ?? []))
        } catch {
            return .failure(error)
        }
    }

    @Test(arguments: [
        ("top.mp3", "top.mp3", "top"),
        ("Album%20One/01%20intro.mp3", "Album One/01 intro.mp3", "one"),
        ("link-in.mp3", "top.mp3", "top"),
        ("link-abs-in.mp3", "top.mp3", "top"),
        ("Linked%20Album/01%20intro.mp3", "Album One/01 intro.mp3", "one"),
    ])
    func open_servesFilesAndSymlinksInside(encoded: String, real: String, content: String) throws {
        let (root, base) = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: base) }
        let resolver = try #require(PathResolver(folder: root.path))
        guard case .success(let (path, bytes)) = Self.open(resolver, encoded) else {
            Issue.record("\(encoded): \(Self.open(resolver, encoded))")
            return
        }
        #expect(bytes == Array(content.utf8))
        // The path names the file itself (the catalog's key), whichever way the request came.
        let resolved = try resolver.resolve(encoded: Substring(encoded))
        #expect(path == resolver.root + "/" + real || path == resolved)
        #expect(PathResolver.realPath(path) == resolver.root + "/" + real)
    }

    @Test(arguments: [
        ("link-out.mp3", PathError.outsideRoot),
        ("link-hidden.mp3", .notFound),
        (".hidden/secret.mp3", .notFound),
        ("%2Ehidden/secret.mp3", .notFound),
        ("Album%20One", .notFound),
        ("missing.mp3", .notFound),
        ("top.mp3/x", .notFound),
        ("../outside.mp3", .malformed),
        ("Album%20One/../top.mp3", .malformed),
        ("a//b.mp3", .malformed),
        ("bad%zzescape.mp3", .malformed),
        ("nul%00.mp3", .malformed),
        ("back%5Cslash.mp3", .malformed),
        ("%FF.mp3", .malformed),
    ])
    func open_refusesWhatResolveRefuses(encoded: String, expected: PathError) throws {
        let (root, base) = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: base) }
        let resolver = try #require(PathResolver(folder: root.path))
        guard case .failure(let error) = Self.open(resolver, encoded) else {
            Issue.record("\(encoded) was served")
            return
        }
        #expect(error == expected, "\(encoded)")
    }
}
