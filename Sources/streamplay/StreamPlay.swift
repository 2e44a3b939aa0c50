import ArgumentParser
import Glibc
import StreamClient
import StreamShared

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

    @Option(help: "alsa[:DEVICE], wav:PATH or null.")
    var output: String = "alsa"

    @Option(help: "Start position in seconds.")
    var start: Double = 0

    @Option(help: "Play at most this many seconds.")
    var duration: Double?

    @Option(help: "Volume, 0...2.")
    var volume: Float = 1

    @Option(help: "Playback rate 0.1...16, pitch kept.")
    var rate: Double = 1

    @Option(parsing: .unconditional, help: "Pitch shift in semitones, -12...12, tempo kept.")
    var pitch: Double = 0

    @Option(help: "Equalizer: a preset (flat, bass, treble, loudness, vocal, speech, rock, pop, jazz, classical) or bands like 31:+3,1k:-2,hs8k:+2:0.7,preamp:-3.")
    var eq: String?

    @Option(help: "Resample to this rate (Hz) when the track's differs, e.g. the sound card's.")
    var outputRate: Int?

    @Option(help: ArgumentHelp("Time-stretch engine: wsola or sonic.", visibility: .hidden))
    var stretchEngine: String = "wsola"

    @Option(help: "Throttle buffer size in bytes.")
    var bufferBytes: Int = 1 << 20

    @Flag(help: "Pace wav: and null outputs to real time.")
    var realtime = false

    @Flag(help: "Print a JSON object of playback statistics as the last stdout line.")
    var stats = false

    @Flag(help: "Component-tagged diagnostics on stderr.")
    var verbose = false

    @Option(help: "Give up after this many seconds without receiving data.")
    var retryFor: Double = 30

    @Option(help: "Treat a transfer that stalls this many seconds as dropped and reconnect.")
    var stallTimeout: Double = 10

    @Option(help: "HLS: play the master playlist's variant with the highest BANDWIDTH at or below this many bits per second.")
    var maxBitrate: Int?
}

extension StreamPlay {
    func validate() throws {
        guard (0...2).contains(volume) else { throw ValidationError("--volume must be within 0...2") }
        // Times become sample and frame counts: a week bounds them as it bounds a file's own times.
        let week = InputLimits.maxDurationSeconds
        guard (0...week).contains(start) else { throw ValidationError("--start must be within 0...\(Int(week)) seconds") }
        if let duration, !(duration > 0 && duration <= week) {
            throw ValidationError("--duration must be positive and at most \(Int(week)) seconds")
        }
        guard retryFor >= 0, retryFor <= week else { throw ValidationError("--retry-for must be within 0...\(Int(week)) seconds") }
        guard stallTimeout > 0, stallTimeout <= 86_400 else { throw ValidationError("--stall-timeout must be within 0...86400 seconds") }
        guard bufferBytes >= 65_536 else { throw ValidationError("--buffer-bytes must be at least 65536") }
        if let maxBitrate, maxBitrate <= 0 { throw ValidationError("--max-bitrate must be positive") }
        guard (0.1...16).contains(rate) else { throw ValidationError("--rate must be within 0.1...16") }
        guard (-12...12).contains(pitch) else { throw ValidationError("--pitch must be within -12...12 semitones") }
        if let eq { do { _ = try EQSettings.parse(eq) } catch { throw ValidationError(error.description) } }
        if let outputRate, !(8_000...384_000).contains(outputRate) { throw ValidationError("--output-rate must be within 8000...384000") }
        guard TimePitch.Engine(rawValue: stretchEngine) != nil else { throw ValidationError("--stretch-engine must be wsola or sonic") }
    }

    func run() throws {
        if info { return try printInfo() }
        let sink: AudioOutput
        if output == "null" {
            sink = NullOutput()
        } else if output.hasPrefix("wav:") {
            sink = WAVFileOutput(path: String(output.dropFirst(4)))
        } else if output == "alsa" || output.hasPrefix("alsa:") {
            sink = ALSAOutput(device: output.hasPrefix("alsa:") ? String(output.dropFirst(5)) : "default")
        } else {
            throw ValidationError("--output must be alsa[:DEVICE], wav:PATH or null")
        }
        var options = PlayerOptions()
        options.start = start
        options.duration = duration
        options.volume = volume
        options.bufferBytes = bufferBytes
        options.rate = rate
        options.semitones = pitch
        if let eq { options.eq = (try? EQSettings.parse(eq)) ?? .flat }
        options.outputSampleRate = outputRate
        options.stretchEngine = TimePitch.Engine(rawValue: stretchEngine) ?? .wsola
        options.realtime = realtime
        options.http.retryFor = retryFor
        options.http.stallTimeout = stallTimeout
        options.hls.maxBitrate = maxBitrate
        var log: (@Sendable (String) -> Void)?
        if verbose {
            log = { message in Self.stderrLine("streamplay: " + message) }
        }
        let player: Player
        do {
            player = try Player(url: source, output: sink, options: options, log: log)
        } catch {
            Self.fail("streamplay: \(error)", code: 1)
        }
        let terminal = TerminalUI(player: player, enabled: isatty(0) == 1 && isatty(1) == 1 && (sink.isRealtime || realtime))
        terminal.start()
        let outcome = Result { () throws(PlaybackError) -> PlayerStats in try player.run() }
        terminal.stop()
        for warning in (try? outcome.get())?.warnings ?? player.lastStats?.warnings ?? [] {
            Self.stderrLine("streamplay: warning: " + warning)
        }
        switch outcome {
        case .success(let result):
            if stats { print(result.json) }
        case .failure(let error):
            if stats, let partial = player.lastStats { print(partial.json) }
            Self.fail("streamplay: \(error.message)", code: error.exitCode)
        }
    }

    private func printInfo() throws {
        do {
            if HLSSource.isPlaylist(source) {
                var options = HLSOptions()
                options.maxBitrate = maxBitrate
                print(try HLSInfo.json(url: source, options: options))
            } else if source.contains("://") {
                let (analysis, bytesRead) = try TrackInfo.analyze(url: source)
                if verbose { Self.stderrLine("streamplay: source: --info read \(bytesRead) bytes through Range requests") }
                print(TrackInfo.json(analysis))
            } else {
                print(TrackInfo.json(try TrackInfo.analyze(path: source)))
            }
        } catch let error as SourceError {
            Self.fail("streamplay: \(error)", code: error.exitCode)
        } catch {
            Self.fail("streamplay: \(error)", code: 1)
        }
    }

    /// ArgumentParser's own entry point exits 64 on a usage error; DESIGN.md promises 2.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                fail(fullMessage(for: error), code: 2)
            }
            exit(withError: error)
        }
    }

    static func stderrLine(_ message: String) {
        StandardStream.error.write(message + "\n")
    }

    /// Prints one line on stderr and exits with the documented status.
    static func fail(_ message: String, code: Int32) -> Never {
        stderrLine(message)
        Glibc.exit(code)
    }
}
