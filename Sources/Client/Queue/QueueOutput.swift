import StreamShared

/// The output a queue's players share: opened once and kept open from track to track, so a
/// WAV file holds the whole queue and a sound card is not reopened between tracks of one
/// format. A track in another format reopens a device; a file cannot change format midway, so
/// there it is an error naming the track (`--output-rate` resamples every track to one rate).
public final class QueueOutput: AudioOutput {
    private let inner: AudioOutput
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
}
