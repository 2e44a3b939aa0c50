import ArgumentParser
import StreamClient
import StreamShared
#if canImport(Glibc)
import Glibc
#endif

/// streamplay: plays (and describes) an audio stream.
@main
struct StreamPlay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "streamplay",
        abstract: "Stream and play audio from a streamd server, any HTTP server, or a local file.")

    @Argument(help: "URL or local path of the track.")
    var source: String

    @Flag(help: "Print what the track is (container, codec, duration, tags) as one JSON object and exit.")
    var info = false
}

extension StreamPlay {
    func run() throws {
        guard info else {
            fail("streamplay: player: playback is not built yet (it arrives with the client pipeline); use --info", code: 2)
        }
        if source.contains("://") {
            fail("streamplay: source: --info reads local files only for now (\(source))", code: 2)
        }
        do {
            let analysis = try TrackInfo.analyze(path: source)
            print(TrackInfo.json(analysis))
        } catch let error as FileError {
            fail("streamplay: \(error)", code: 1)
        } catch let error as FormatError {
            fail("streamplay: \(error)", code: 1)
        } catch {
            fail("streamplay: \(error)", code: 1)
        }
    }

    /// Prints one line on stderr and exits with the documented status.
    private func fail(_ message: String, code: Int32) -> Never {
        var line = message + "\n"
        line.withUTF8 { buffer in _ = Glibc.write(2, buffer.baseAddress, buffer.count) }
        Glibc.exit(code)
    }
}
