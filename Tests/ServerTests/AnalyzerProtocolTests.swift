import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP
@testable import StreamShared

/// Frames between streamd and its analyzer worker.
@Suite struct AnalyzerProtocolTests {
    @Test func frames_arriveWhole_whateverTheChunking() throws {
        let first = AnalyzerProtocol.request(path: "/music/a.mp3", timeoutMillis: 10_000)
        let second = AnalyzerProtocol.encode(.failure("mp4: bad box"))
        let stream = first + second
        for chunk in [1, 3, 4, 5, stream.count] {
            var assembler = FrameAssembler()
            var payloads: [[UInt8]] = []
            var at = 0
            while at < stream.count {
                assembler.append(stream[at..<min(stream.count, at + chunk)])
                at += chunk
                while let payload = try assembler.next() { payloads.append(payload) }
            }
            #expect(payloads.count == 2, "chunks of \(chunk)")
            guard payloads.count == 2 else { continue }
            let request = try AnalyzerProtocol.parseRequest(payloads[0])
            #expect(request.path == "/music/a.mp3" && request.timeoutMillis == 10_000)
            #expect(try AnalyzerProtocol.parseAnswer(payloads[1]) == .failure("mp4: bad box"))
        }
    }

    @Test func oversizedFrame_throws() {
        var assembler = FrameAssembler()
        assembler.append([0xFF, 0xFF, 0xFF, 0x7F][...])
        #expect(throws: FormatError.self) { try assembler.next() }
    }

    @Test func emptyFrame_isAFrame() throws {
        var assembler = FrameAssembler()
        assembler.append(AnalyzerProtocol.frame([])[...])
        #expect(try assembler.next() == [])
        #expect(try assembler.next() == nil)
    }

    @Test func answers_roundTrip_andUnknownKindsThrow() throws {
        let analysis = TrackAnalysis.emptyForTests
        var assembler = FrameAssembler()
        assembler.append(AnalyzerProtocol.encode(.analysis(analysis))[...])
        let payload = try #require(try assembler.next())
        #expect(try AnalyzerProtocol.parseAnswer(payload) == .analysis(analysis))
        #expect(throws: FormatError.self) { try AnalyzerProtocol.parseAnswer([7, 1, 2]) }
        #expect(throws: FormatError.self) { try AnalyzerProtocol.parseAnswer([]) }
        #expect(throws: FormatError.self) { try AnalyzerProtocol.parseRequest([1, 2]) }
        #expect(throws: FormatError.self) { try AnalyzerProtocol.parseRequest([1, 2, 3, 4, 9, 0x2F]) }
        let quick = Array(AnalyzerProtocol.request(path: "/q.mp3", timeoutMillis: 5, mode: .quick).dropFirst(4))
        #expect(try AnalyzerProtocol.parseRequest(quick).mode == .quick)
    }

    @Test func unicodePaths_survive() throws {
        let path = "/music/Album Ünïcode/01 Ça va — chanson.mp3"
        var assembler = FrameAssembler()
        assembler.append(AnalyzerProtocol.request(path: path, timeoutMillis: 1)[...])
        #expect(try AnalyzerProtocol.parseRequest(try #require(try assembler.next())).path == path)
    }
}

extension TrackAnalysis {
    /// A small analysis for protocol tests (the real ones come from the library's files).
    static var emptyForTests: TrackAnalysis {
        TrackAnalysis(container: .mp3, codec: "mp3", sampleRate: 44_100, channels: 2, durationSeconds: 1.5,
                      bitrate: 128_000, frames: 58, firstFrameOffset: 0, encoderDelay: 576, encoderPadding: 1_000,
                      totalSamples: 66_816, tags: TrackTags(title: "t"),
                      seekIndex: SeekIndex(points: [SeekPoint(t: 0, byte: 0)], firstFrameOffset: 0, audioEndOffset: 24_000,
                                           encoderDelay: 576, encoderPadding: 1_000, durationSeconds: 1.5))
    }
}
