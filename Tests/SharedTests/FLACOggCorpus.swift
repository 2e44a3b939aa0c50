import Foundation
import TestSupport
@testable import StreamShared

/// The real-world FLAC and Ogg files of ../shared/corpus/realworld-xiph (read in place) and
/// ffprobe's view of them from its refs.tsv.
enum FLACOggCorpus {
    /// One row of refs.tsv.
    struct Reference {
        var file: String
        var format: String
        var rate: Int?
        var channels: Int?
        /// ffprobe's bit depth for lossless streams ("fltp" for Vorbis/Opus gives nil).
        var bits: Int?
        var duration: Double?
        /// Samples the reference decoder produced (flac, opusdec, oggdec), when it ran.
        var referenceFrames: Int?
    }

    static var directory: URL {
        if let dir = ProcessInfo.processInfo.environment["STREAM_XIPH_CORPUS"] { return URL(fileURLWithPath: dir) }
        return TestPaths.packageRoot.appendingPathComponent("../shared/corpus/realworld-xiph/corpus").standardized
    }

    /// The rows for files with one of `extensions`; empty when the corpus is missing (the caller fails then).
    static func references(_ extensions: Set<String>) -> [Reference] {
        let url = directory.appendingPathComponent("../refs.tsv").standardized
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        var rows: [Reference] = []
        var columns: [String: Int] = [:]
        for (n, line) in text.split(separator: "\n").enumerated() {
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            if n == 0 {
                for (i, name) in cells.enumerated() { columns[name] = i }
                continue
            }
            func cell(_ name: String) -> String? {
                guard let i = columns[name], i < cells.count, cells[i] != "-", !cells[i].isEmpty else { return nil }
                return cells[i]
            }
            guard let file = cell("filename"), let ext = file.split(separator: ".").last, extensions.contains(String(ext)) else { continue }
            rows.append(Reference(file: file, format: cell("format") ?? "", rate: cell("ff_rate").flatMap { Int($0) },
                                  channels: cell("ff_channels").flatMap { Int($0) }, bits: cell("ff_bits").flatMap { Int($0) },
                                  duration: cell("ff_duration").flatMap { Double($0) },
                                  referenceFrames: cell("ref_frames").flatMap { Int($0) }))
        }
        return rows
    }

    static func bytes(_ file: String) throws -> MemoryBytes {
        MemoryBytes(Array(try Data(contentsOf: directory.appendingPathComponent(file))))
    }
}
