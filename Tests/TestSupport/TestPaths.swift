import Foundation

/// Paths of the built products and the generated media, for the tests.
public enum TestPaths {
    /// The folder holding the test binary, which is where SwiftPM puts the executables too.
    public static var binDir: URL {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // Inside an .xctest bundle on some layouts the binary sits one level deeper.
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("streamd").path), url.path != "/" {
            url = url.deletingLastPathComponent()
        }
        return url
    }

    /// The built streamd.
    public static var streamd: String { binDir.appendingPathComponent("streamd").path }

    /// The checkout: two folders above this file's folder.
    public static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// The generated library; tests that need it fail clearly when it is missing. Resolved, since
    /// FileManager's enumerator does not descend into a root that is a symlink (a worktree's
    /// `media/out` pointing at another checkout's media found no files at all).
    public static var media: URL {
        if let dir = ProcessInfo.processInfo.environment["STREAM_MEDIA_DIR"] { return URL(fileURLWithPath: dir).resolvingSymlinksInPath() }
        return packageRoot.appendingPathComponent("media/out").resolvingSymlinksInPath()
    }

    /// The generated Ogg Opus and Vorbis files (`make media`: media/make-media.sh --ogg), kept
    /// out of the library until the catalog reads Ogg.
    public static var oggMedia: URL {
        if let dir = ProcessInfo.processInfo.environment["STREAM_OGG_MEDIA_DIR"] { return URL(fileURLWithPath: dir).resolvingSymlinksInPath() }
        return packageRoot.appendingPathComponent("media/ogg").resolvingSymlinksInPath()
    }

    /// ../shared/tools/pcm-compare beside the checkout, when present.
    public static var pcmCompare: String? {
        let candidates = [packageRoot.appendingPathComponent("../shared/tools/pcm-compare").standardized.path,
                          "/work/shared/tools/pcm-compare"]
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }

    /// A catalog database path in a new temporary folder: tests never touch the user's state folder.
    public static func temporaryDatabase() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-test-db-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("catalog.db").path
    }

    /// The regular files of the generated media, hidden ones left out, in path order.
    /// The generated FLAC, AIFF and ALAC files (`make-media.sh --lossless`): a folder of their own
    /// beside the library until the catalog reads these formats.
    public static var losslessMedia: URL {
        if let dir = ProcessInfo.processInfo.environment["STREAM_LOSSLESS_DIR"] { return URL(fileURLWithPath: dir).resolvingSymlinksInPath() }
        return media.deletingLastPathComponent().appendingPathComponent("lossless").resolvingSymlinksInPath()
    }

    public static func mediaFiles() -> [URL] {
        guard let walker = FileManager.default.enumerator(at: media, includingPropertiesForKeys: [.isRegularFileKey]) else {
            return []
        }
        return walker.compactMap { $0 as? URL }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.path < $1.path }
    }
}
