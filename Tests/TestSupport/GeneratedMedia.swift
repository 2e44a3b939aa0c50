import Foundation
import Testing

/// The generated library (media/make-media.sh) for unit tests that check real files when they
/// are present: absent files skip those checks, unless STREAM_MEDIA_DIR is set (the caller
/// asked for the media), when they are a failure.
public enum GeneratedMedia {
    /// The variable naming the media folder.
    public static let variable = "STREAM_MEDIA_DIR"

    /// Whether the caller named the media folder (then a missing file is a failure).
    public static var isRequired: Bool { ProcessInfo.processInfo.environment[variable] != nil }

    /// The file's bytes, or nil when it is absent (recorded as an issue when `isRequired`).
    public static func load(_ name: String) throws -> [UInt8]? {
        let url = TestPaths.media.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: url.path) else {
            if isRequired {
                Issue.record("\(variable) is set but \(url.path) is missing: run media/make-media.sh")
            }
            return nil
        }
        return [UInt8](try Data(contentsOf: url))
    }

    /// `ffprobe -v error ARGUMENTS -of default=nw=1 FILE` (a file of the media folder) as
    /// key/value pairs; nil when ffprobe cannot be run or fails.
    public static func ffprobe(_ arguments: [String], file: String) -> [String: String]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error"] + arguments
            + ["-of", "default=nw=1", TestPaths.media.appendingPathComponent(file).path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        var result: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
        }
        return result
    }
}
