import Foundation

/// Makes the small FLAC, Opus, Vorbis, AIFF and ALAC files the tests read: tagged ones with
/// covers, ReplayGain and R128 gains, untagged ones, a FLAC of 1152-sample blocks and a chained Opus.
public enum LosslessMedia {
    /// Runs `tool` from the PATH; a failure (or a missing tool) throws with its stderr.
    public static func run(_ tool: String, _ arguments: [String]) throws {
        guard let path = which(tool) else { throw TestFailure("\(tool) is not installed (make deps)") }
        let result = try runCommand(path, arguments)
        guard result.status == 0 else {
            throw TestFailure("\(tool) \(arguments.joined(separator: " ")): \(String(decoding: result.stderr, as: UTF8.self))")
        }
    }

    /// Writes the files into `folder` (created); the names say what each is.
    public static func make(in folder: URL) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
        let quiet = ["-v", "error", "-y"]
        try run("ffmpeg", quiet + ["-f", "lavfi", "-i", "sine=frequency=440:duration=2.5:sample_rate=44100", "-ac", "2",
                                   "-c:a", "pcm_s16le", path("source.wav")])
        try run("ffmpeg", quiet + ["-f", "lavfi", "-i", "color=red:s=8x8", "-frames:v", "1", path("cover.png")])
        try run("flac", ["-s", "-f", "-o", path("tagged.flac"), "-T", "TITLE=Flac Title", "-T", "ARTIST=Flac Artist",
                         "-T", "ALBUM=Lossless Album", "-T", "REPLAYGAIN_TRACK_GAIN=-6.50 dB", "-T", "REPLAYGAIN_TRACK_PEAK=0.5",
                         "--picture=" + path("cover.png"), path("source.wav")])
        try run("flac", ["-s", "-f", "--no-seektable", "-o", path("untagged.flac"), path("source.wav")])
        try run("flac", ["-s", "-f", "--blocksize=1152", "-o", path("blocks.flac"), path("source.wav")])
        try run("opusenc", ["--quiet", "--title", "Opus Title", "--artist", "Opus Artist", "--album", "Lossless Album",
                            "--comment", "R128_TRACK_GAIN=-512", "--comment", "R128_ALBUM_GAIN=-256",
                            "--picture", path("cover.png"), path("source.wav"), path("tagged.opus")])
        try run("opusenc", ["--quiet", "--serial", "1111", path("source.wav"), path("untagged.opus")])
        try run("oggenc", ["-Q", "-t", "Vorbis Title", "-a", "Vorbis Artist", "-l", "Lossless Album",
                           "-c", "REPLAYGAIN_ALBUM_GAIN=-1.25 dB", "-o", path("tagged.ogg"), path("source.wav")])
        try run("oggenc", ["-Q", "-o", path("untagged.ogg"), path("source.wav")])
        try run("ffmpeg", quiet + ["-i", path("source.wav"), "-i", path("cover.png"), "-map", "0", "-map", "1", "-c:a", "alac",
                                   "-c:v", "copy", "-disposition:v", "attached_pic", "-metadata", "title=Alac Title",
                                   "-metadata", "artist=Alac Artist", "-metadata", "album=Lossless Album", path("tagged.m4a")])
        try run("ffmpeg", quiet + ["-i", path("source.wav"), "-map_metadata", "-1", "-c:a", "alac", path("untagged.m4a")])
        try run("ffmpeg", quiet + ["-i", path("source.wav"), "-i", path("cover.png"), "-map", "0", "-map", "1",
                                   "-c:a", "pcm_s24be", "-c:v", "copy", "-write_id3v2", "1", "-metadata", "title=Aiff Title",
                                   "-metadata", "artist=Aiff Artist", "-metadata", "album=Lossless Album", path("tagged.aiff")])
        try run("ffmpeg", quiet + ["-i", path("source.wav"), "-map_metadata", "-1", "-c:a", "pcm_s16be", path("untagged.aiff")])
        // Two links, each a whole Opus stream of its own.
        let first = try Data(contentsOf: URL(fileURLWithPath: path("untagged.opus")))
        try run("opusenc", ["--quiet", "--serial", "4242", "--title", "Second Link", path("source.wav"), path("second.opus")])
        let second = try Data(contentsOf: URL(fileURLWithPath: path("second.opus")))
        try (first + second).write(to: URL(fileURLWithPath: path("chained.opus")))
        try FileManager.default.removeItem(atPath: path("second.opus"))
    }
}
