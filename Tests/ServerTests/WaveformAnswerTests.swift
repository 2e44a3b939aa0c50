import Testing
@testable import StreamServer

/// The waveform answer's number writer (two digits at a time into one buffer): every 16-bit
/// value comes out as Swift prints it.
@Suite struct WaveformAnswerTests {
    @Test func everyInt16_isWrittenAsSwiftPrintsIt() {
        var wrong: [Int16] = []
        var out = [UInt8](repeating: 0, count: 8)
        WaveformAnswer.digitPairs.withUnsafeBufferPointer { digits in
            out.withUnsafeMutableBufferPointer { buffer in
                for value in Int16.min...Int16.max {
                    let end = WaveformAnswer.write(value, into: buffer, at: 1, digits: digits)
                    if String(decoding: buffer[1..<end], as: UTF8.self) != String(value) { wrong.append(value) }
                }
            }
        }
        #expect(wrong.isEmpty, "written wrong: \(wrong.prefix(10))")
    }

    @Test func seconds_areShortAndFinite() {
        #expect(WaveformAnswer.seconds(183.4) == "183.4")
        #expect(WaveformAnswer.seconds(0) == "0.0")
        #expect(WaveformAnswer.seconds(1.0 / 3) == "0.333333")
        #expect(WaveformAnswer.seconds(.infinity) == "0")
    }
}
