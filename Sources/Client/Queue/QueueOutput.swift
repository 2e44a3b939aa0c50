import StreamShared

/// The output a queue's players share: opened once and kept open from track to track, so a
/// WAV file holds the whole queue and a sound card is not reopened between tracks of one
/// format. A track at another rate is resampled to the running rate when the output cannot
/// switch (a file; `--output-rate` makes every track one rate anyway), else the device is
/// reopened (with 10 ms fades, by the output loop). A file cannot change its channel count
/// midway: there that is an error naming the track.
public final class QueueOutput: AudioOutput {
    let inner: AudioOutput
    private var openFormat: AudioFormat?

    public init(_ inner: AudioOutput, reopensOnFormatChange: Bool) {
        self.inner = inner
        self.reopensOnFormatChange = reopensOnFormatChange
    }

    /// True for devices (ALSA), false for files.
    public let reopensOnFormatChange: Bool

    public var isRealtime: Bool { inner.isRealtime }

    public func open(_ format: AudioFormat) throws {
        if let openFormat {
            if openFormat.sampleRate == format.sampleRate && openFormat.channels == format.channels { return }
            guard reopensOnFormatChange else {
                throw PlaybackError(message: "output: this track is \(format.sampleRate) Hz \(format.channels) ch, the file was started at "
                                    + "\(openFormat.sampleRate) Hz \(openFormat.channels) ch (--output-rate makes every track one rate)",
                                    exitCode: 1)
            }
            try inner.close()
            self.openFormat = nil
        }
        try inner.open(format)
        openFormat = format
    }

    /// Decode side, before a track's samples are queued behind those of a track in `running`:
    /// throws when the output cannot take `format` after it.
    public func check(_ format: AudioFormat, after running: AudioFormat) throws {
        guard !reopensOnFormatChange, format.sampleRate != running.sampleRate || format.channels != running.channels else { return }
        throw PlaybackError(message: "output: this track is \(format.sampleRate) Hz \(format.channels) ch, the file was started at "
                            + "\(running.sampleRate) Hz \(running.channels) ch (a file cannot change its channel count)",
                            exitCode: 1)
    }

    public func write(_ samples: UnsafeBufferPointer<Float>) throws { try inner.write(samples) }

    /// A track ended: the output stays open for the next one.
    public func close() throws {}

    /// The queue ended: drains the device or completes the file.
    public func finish() throws {
        guard openFormat != nil else { return }
        openFormat = nil
        try inner.close()
    }

    public func preferredSampleRate(for format: AudioFormat) -> Int? { inner.preferredSampleRate(for: format) }

    public var deviceUnderruns: Int { inner.deviceUnderruns }

    /// The rate a track in `format` is resampled to when it follows a track whose output ran
    /// in `running`: the running rate when this output cannot switch (a file), else the device's
    /// own preference.
    public func sampleRate(for format: AudioFormat, following running: AudioFormat?) -> Int? {
        if !reopensOnFormatChange, let running, running.sampleRate != format.sampleRate { return running.sampleRate }
        return inner.preferredSampleRate(for: format)
    }
}
