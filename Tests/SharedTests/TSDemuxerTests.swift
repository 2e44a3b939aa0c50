import Testing
@testable import StreamShared

/// Builds MPEG-TS packets for tests: PAT, PMT and PES packets split over 188-byte packets.
struct TSBuilder {
    var continuity: [Int: UInt8] = [:]
    var pmtPID = 0x1000
    var audioPID = 0x100

    /// One packet; the payload is padded with an adaptation field to 184 bytes.
    mutating func packet(pid: Int, unitStart: Bool, payload: ArraySlice<UInt8>, scrambled: Bool = false) -> [UInt8] {
        precondition(payload.count <= 184)
        let cc = continuity[pid, default: 0]
        continuity[pid] = (cc + 1) & 0x0F
        var p: [UInt8] = [0x47, UInt8(pid >> 8) | (unitStart ? 0x40 : 0), UInt8(pid & 0xFF)]
        let stuffing = 184 - payload.count
        let scrambling: UInt8 = scrambled ? 0x80 : 0
        if stuffing > 0 {
            p.append(scrambling | 0x30 | cc)
            p.append(UInt8(stuffing - 1))
            if stuffing > 1 { p.append(0x00); p += [UInt8](repeating: 0xFF, count: stuffing - 2) }
        } else {
            p.append(scrambling | 0x10 | cc)
        }
        p += payload
        return p
    }

    /// A PSI section in one packet (pointer field 0); the CRC is not checked by the demuxer.
    mutating func section(pid: Int, tableID: UInt8, body: [UInt8]) -> [UInt8] {
        let length = body.count + 5 + 4
        var s: [UInt8] = [0x00, tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF), 0x00, 0x01, 0xC1, 0x00, 0x00]
        s += body
        s += [0xDE, 0xAD, 0xBE, 0xEF]
        return packet(pid: pid, unitStart: true, payload: s[...])
    }

    mutating func pat() -> [UInt8] {
        section(pid: 0, tableID: 0x00, body: [0x00, 0x01, 0xE0 | UInt8(pmtPID >> 8), UInt8(pmtPID & 0xFF)])
    }

    /// A PMT listing (stream type, PID) pairs.
    mutating func pmt(_ streams: [(UInt8, Int)]) -> [UInt8] {
        var body: [UInt8] = [0xE0 | UInt8(audioPID >> 8), UInt8(audioPID & 0xFF), 0xF0, 0x00]
        for (type, pid) in streams { body += [type, 0xE0 | UInt8(pid >> 8), UInt8(pid & 0xFF), 0xF0, 0x00] }
        return section(pid: pmtPID, tableID: 0x02, body: body)
    }

    /// A PES packet (stream id 0xC0, with a PTS) carried in as many packets as it needs.
    mutating func pes(_ payload: [UInt8], pts: UInt64, pid: Int? = nil, scrambled: Bool = false) -> [UInt8] {
        let p0 = UInt8(0x21 | ((pts >> 29) & 0x0E))
        let ptsBytes: [UInt8] = [p0, UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
                                 UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1)]
        let length = 3 + 5 + payload.count
        var pes: [UInt8] = [0, 0, 1, 0xC0, UInt8(length >> 8), UInt8(length & 0xFF), 0x80, 0x80, 5] + ptsBytes
        pes += payload
        var out: [UInt8] = []
        var offset = 0
        while offset < pes.count {
            let take = min(184, pes.count - offset)
            out += packet(pid: pid ?? audioPID, unitStart: offset == 0, payload: pes[offset..<(offset + take)], scrambled: scrambled)
            offset += take
        }
        return out
    }
}

@Suite struct TSDemuxerTests {
    /// Fake "frames": a counter pattern, so order and completeness show.
    static func payload(_ n: Int, seed: Int) -> [UInt8] { (0..<n).map { UInt8((seed + $0 * 7) & 0xFF) } }

    func segment(_ builder: inout TSBuilder, type: UInt8 = 0x0F, payloads: [[UInt8]], firstPTS: UInt64 = 126_000) -> [UInt8] {
        var bytes = builder.pat() + builder.pmt([(0x1B, 0x200), (type, builder.audioPID)])
        for (i, p) in payloads.enumerated() {
            bytes += builder.pes(p, pts: firstPTS + UInt64(i) * 1920)
            // Video packets in between, which must be ignored.
            bytes += builder.packet(pid: 0x200, unitStart: true, payload: [UInt8](repeating: 0xAB, count: 184)[...])
        }
        return bytes
    }

    @Test func audioPESPayloads_comeOutInOrder_withTheFirstPTS() throws {
        var builder = TSBuilder()
        let payloads = [Self.payload(1_000, seed: 1), Self.payload(90, seed: 2), Self.payload(184 * 3 - 14, seed: 3)]
        let bytes = segment(&builder, payloads: payloads, firstPTS: 0x1_2345_6789)
        var demuxer = TSDemuxer()
        let out = try demuxer.demux(bytes[...])
        #expect(out.codec == .adts)
        #expect(out.firstPTS == 0x1_2345_6789, "the 33-bit PTS survives")
        #expect(out.elementaryStream == payloads.flatMap { $0 })
    }

    @Test func mpegAudioStreamType_isMPEG() throws {
        for type: UInt8 in [0x03, 0x04] {
            var builder = TSBuilder()
            var demuxer = TSDemuxer()
            let out = try demuxer.demux(segment(&builder, type: type, payloads: [Self.payload(500, seed: 9)])[...])
            #expect(out.codec == .mpeg)
            #expect(out.elementaryStream == Self.payload(500, seed: 9))
        }
    }

    @Test func stateCarriesOverSegments_withoutRepeatedTables() throws {
        var builder = TSBuilder()
        var demuxer = TSDemuxer()
        let first = segment(&builder, payloads: [Self.payload(300, seed: 1)])
        _ = try demuxer.demux(first[...])
        // The next segment has no PAT/PMT: the program map from before still applies.
        let second = builder.pes(Self.payload(400, seed: 2), pts: 999)
        let out = try demuxer.demux(second[...])
        #expect(out.elementaryStream == Self.payload(400, seed: 2))
        #expect(out.firstPTS == 999)
    }

    @Test func junkBetweenPackets_isSkippedByResync() throws {
        var builder = TSBuilder()
        var bytes = segment(&builder, payloads: [Self.payload(200, seed: 1)])
        bytes += [0x00, 0x47, 0x13]          // three junk bytes, one of them a false sync
        bytes += builder.pes(Self.payload(300, seed: 2), pts: 5)
        bytes += builder.pes(Self.payload(10, seed: 3), pts: 6)
        var demuxer = TSDemuxer()
        let out = try demuxer.demux(bytes[...])
        #expect(out.elementaryStream == Self.payload(200, seed: 1) + Self.payload(300, seed: 2) + Self.payload(10, seed: 3))
    }

    @Test func notTransportStream_orNoPlayableAudio_areClearErrors() {
        var demuxer = TSDemuxer()
        #expect(throws: FormatError.notAudio(reason: "not an MPEG transport stream (starts with '<!DOCTYPE html><')")) {
            _ = try demuxer.demux(Array("<!DOCTYPE html><p>".utf8)[...])
        }
        var builder = TSBuilder()
        let ac3 = builder.pat() + builder.pmt([(0x1B, 0x200), (0x81, 0x101)]) + builder.pes([1, 2, 3], pts: 0, pid: 0x101)
        #expect(throws: FormatError.unsupported(component: "mpeg-ts", reason: "no MP3 or AAC (ADTS) audio stream (stream types 0x1b, 0x81)")) {
            _ = try demuxer.demux(ac3[...])
        }
        var fresh = TSDemuxer()
        let noTables = builder.pes([1, 2, 3], pts: 0)
        #expect(throws: FormatError.self) { _ = try fresh.demux(noTables[...]) }
        var encrypted = TSDemuxer()
        var b2 = TSBuilder()
        let scrambled = b2.pat() + b2.pmt([(0x0F, b2.audioPID)]) + b2.pes([1, 2, 3], pts: 0, scrambled: true)
        #expect(throws: FormatError.unsupported(component: "mpeg-ts", reason: "scrambled (encrypted) transport stream packets")) {
            _ = try encrypted.demux(scrambled[...])
        }
    }

    @Test func mutatedAndTruncatedSegments_neverCrash() {
        var builder = TSBuilder()
        let bytes = segment(&builder, payloads: [Self.payload(1_000, seed: 1), Self.payload(50, seed: 2)])
        Fuzz.forEachMutation(of: bytes, count: 10_000) { mutated in
            var demuxer = TSDemuxer()
            _ = try? demuxer.demux(mutated[...])
        }
        Fuzz.forEachTruncation(of: bytes) { prefix in
            var demuxer = TSDemuxer()
            _ = try? demuxer.demux(prefix)
        }
    }
}

/// The ID3 tag that starts a packed-audio segment.
@Suite struct PackedAudioTagTests {
    /// An ID3v2.4 tag with a PRIV timestamp frame (and a text frame before it).
    static func tag(timestamp: UInt64, version: UInt8 = 4) -> [UInt8] {
        func size(_ n: Int, synchsafe: Bool) -> [UInt8] {
            synchsafe ? [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)]
                      : [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
        }
        let text: [UInt8] = [3] + Array("hello".utf8)
        let priv = Array(PackedAudioTag.timestampOwner.utf8) + [0] + (0..<8).map { UInt8(timestamp >> (56 - 8 * UInt64($0)) & 0xFF) }
        var body: [UInt8] = Array("TIT2".utf8) + size(text.count, synchsafe: version == 4) + [0, 0] + text
        body += Array("PRIV".utf8) + size(priv.count, synchsafe: version == 4) + [0, 0] + priv
        body += [UInt8](repeating: 0, count: 7)        // padding
        return Array("ID3".utf8) + [version, 0, 0] + size(body.count, synchsafe: true) + body
    }

    @Test func timestampAndSize_v24AndV23() throws {
        for version: UInt8 in [3, 4] {
            let tag = Self.tag(timestamp: 0x1_0000_0000 + 126_000, version: version)
            let parsed = try #require(try PackedAudioTag.parse((tag + [0xFF, 0xFB, 0x90, 0x00])[...]))
            #expect(parsed.size == tag.count)
            // A typed Optional on both sides: comparing a `UInt64?` with a literal made the
            // #expect expansion's AnyHashable thunk copy 9 bytes out of an 8-byte stack slot
            // (AddressSanitizer: stack-buffer-overflow in compiler-generated code, Swift 6.3.1).
            let expected: UInt64? = 0x1_0000_0000 + 126_000
            #expect(parsed.timestamp == expected)
        }
    }

    @Test func noTag_isNil_andTagWithoutPRIV_hasNoTimestamp() throws {
        #expect(try PackedAudioTag.parse([0xFF, 0xF1, 0x50, 0x80, 0, 0, 0, 0, 0, 0][...]) == nil)
        let bare: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 0]
        #expect(try PackedAudioTag.parse(bare[...]) == PackedAudioTag(size: 10, timestamp: nil))
    }

    @Test func truncatedOrMutatedTags_neverCrash() {
        let tag = Self.tag(timestamp: 90_000)
        Fuzz.forEachTruncation(of: tag) { _ = try? PackedAudioTag.parse($0) }
        Fuzz.forEachMutation(of: tag, count: 5_000) { _ = try? PackedAudioTag.parse($0[...]) }
    }
}
