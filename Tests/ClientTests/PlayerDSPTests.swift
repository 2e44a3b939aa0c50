import Foundation
import Testing
import StreamClient
import StreamShared

/// The DSP chain inside the Player: position in source time at any rate, live changes as calls
/// and events.
@Suite struct PlayerDSPTests {
    /// A 16-bit stereo WAV of a 440 Hz tone, written to a temporary file.
    static func toneWAV(seconds: Double, rate: Int = 44_100) throws -> String {
        let samples = Signal.tone(440, seconds: seconds, rate: rate)
        var bytes: [UInt8] = []
        func le32(_ v: Int) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }
        func le16(_ v: Int) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        bytes += Array("RIFF".utf8); le32(36 + samples.count * 2); bytes += Array("WAVEfmt ".utf8)
        le32(16); le16(1); le16(2); le32(rate); le32(rate * 4); le16(4); le16(16)
        bytes += Array("data".utf8); le32(samples.count * 2)
        for x in samples { le16(Int(UInt16(bitPattern: Int16((x * 32767).rounded())))) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dsp-\(UUID().uuidString).wav").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Counts what is written and asks for a rate change once `changeAfter` frames went out.
    final class CountingOutput: AudioOutput, @unchecked Sendable {
        // @unchecked: written by the output thread only, read after `run()` returned.
        var frames = 0
        var format: AudioFormat?
        var changeAfter = Int.max
        var onChange: () -> Void = {}
        var isRealtime: Bool { false }
        func open(_ format: AudioFormat) throws { self.format = format }
        func write(_ samples: UnsafeBufferPointer<Float>) throws {
            let before = frames
            frames += samples.count / (format?.channels ?? 2)
            if before < changeAfter && frames >= changeAfter { onChange() }
        }
        func close() throws {}
    }

    /// Plays `path` and returns the output and every event seen.
    static func play(_ path: String, options: PlayerOptions, output: CountingOutput = CountingOutput(),
                     during: (Player) -> Void = { _ in }) async throws -> (CountingOutput, [PlayerEvent]) {
        let player = try Player(url: path, output: output, options: options)
        during(player)
        let collector = Task { var seen: [PlayerEvent] = []; for await e in player.events { seen.append(e) }; return seen }
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<PlayerStats, PlaybackError>, Never>) in
            Thread.detachNewThread { done.resume(returning: Result { () throws(PlaybackError) in try player.run() }) }
        }
        _ = try result.get()
        return (output, await collector.value)
    }

    @Test(arguments: [0.5, 2.0])
    func position_isInSourceTime(rate: Double) async throws {
        let path = try Self.toneWAV(seconds: 4)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = PlayerOptions()
        options.rate = rate
        let (output, events) = try await Self.play(path, options: options)
        #expect(abs(Double(output.frames) - 4 * 44_100 / rate) <= 4 * 44_100 / rate * 0.01, "\(output.frames) frames out")
        let positions = events.compactMap { e -> Double? in if case .progress(let p, _) = e { return p } else { return nil } }
        let last = try #require(positions.last)
        // Output frames counted as source time would end near 4 / rate seconds instead.
        #expect(positions.allSatisfy { $0 <= 4.05 }, "rate \(rate): a position past the end: \(positions.max() ?? 0)")
        #expect(last >= 2.9, "rate \(rate): last position \(last) s of 4")
    }

    @Test func rateChangeWhilePlaying_isACallAndAnEvent() async throws {
        let path = try Self.toneWAV(seconds: 6)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = CountingOutput()
        output.changeAfter = 44_100
        var options = PlayerOptions()
        options.eq = try EQSettings.parse("bass")
        let (_, events) = try await Self.play(path, options: options, output: output) { player in
            output.onChange = { player.setRate(2); player.setPitch(semitones: -3) }
        }
        let changes = events.compactMap { e -> (Double, Double, String)? in
            if case .dsp(let r, let s, let eq) = e { return (r, s, eq) } else { return nil }
        }
        let change = try #require(changes.last, "no .dsp event")
        let bass = try EQSettings.parse("bass").description
        #expect(change.0 == 2 && change.1 == -3 && change.2 == bass)
        // 1 s at 1×, then the remaining ~5 s at 2× (less what was already decoded ahead).
        #expect(output.frames < 6 * 44_100 * 9 / 10, "\(output.frames) frames: the rate change did not take")
        #expect(output.frames > 3 * 44_100, "\(output.frames) frames")
    }

    @Test func outputRate_resamplesTheWholeTrack() async throws {
        let path = try Self.toneWAV(seconds: 2)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = PlayerOptions()
        options.outputSampleRate = 48_000
        let (output, _) = try await Self.play(path, options: options)
        #expect(output.format?.sampleRate == 48_000)
        #expect(abs(output.frames - 96_000) <= 2, "\(output.frames) frames at 48 kHz for 2 s")
    }
}
