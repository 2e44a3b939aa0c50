/// The audio codecs an HLS transport stream can carry that this project plays.
public enum TSAudioCodec: String, Sendable, Equatable {
    /// AAC in ADTS frames (stream_type 0x0F).
    case adts
    /// MPEG-1/2 audio layers I-III (stream_type 0x03, 0x04).
    case mpeg
}

/// What one call to `TSDemuxer.demux` produced.
public struct TSDemuxedAudio: Sendable, Equatable {
    /// The audio elementary stream: the payloads of the audio PID's PES packets, in order.
    public var elementaryStream: [UInt8]
    /// The first PES packet's presentation time (90 kHz), when it carried one.
    public var firstPTS: UInt64?
    public var codec: TSAudioCodec
}

/// Pulls the audio elementary stream out of MPEG-2 transport stream packets (ISO/IEC 13818-1):
/// PAT → PMT → the first MP3 or AAC stream, then its PES payloads. Pure, no I/O; state (the
/// program map and a PES cut at the end of a segment) carries over between calls, as HLS
/// segments of one stream follow each other. Call `reset()` at a discontinuity.
public struct TSDemuxer: Sendable {
    static let component = "mpeg-ts"
    public static let packetSize = 188
    /// Largest PES packet kept while it is assembled; audio PES packets are a few KB.
    public var maxPESBytes = 1 << 20

    private var pmtPID: Int?
    public private(set) var audioPID: Int?
    public private(set) var codec: TSAudioCodec?
    /// Stream types the PMT listed, for the error when none is playable.
    private var seenStreamTypes: [UInt8] = []
    /// The PES packet being assembled (audio PID only).
    private var pes: [UInt8] = []
    /// Sections (PAT/PMT) being assembled, by PID.
    private var sections: [Int: [UInt8]] = [:]

    public init() {}

    /// Forgets the program map and any partial packet (an HLS discontinuity).
    public mutating func reset() {
        pmtPID = nil
        audioPID = nil
        codec = nil
        seenStreamTypes = []
        pes = []
        sections = [:]
    }

    /// Demuxes whole transport stream packets (an HLS segment). With `isLastOfStream` false a
    /// PES packet cut at the end is kept for the next call; otherwise it is flushed.
    public mutating func demux(_ bytes: ArraySlice<UInt8>, flush: Bool = true) throws -> TSDemuxedAudio {
        guard bytes.first == 0x47 else {
            throw FormatError.notAudio(reason: "not an MPEG transport stream (starts with \(Self.describe(bytes.prefix(16))))")
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var firstPTS: UInt64?
        var ptsTaken = false
        var i = bytes.startIndex
        while i + Self.packetSize <= bytes.endIndex {
            guard bytes[i] == 0x47 else {
                // Lost sync: find the next sync byte confirmed by the one a packet later.
                var j = i + 1
                while j + Self.packetSize < bytes.endIndex, !(bytes[j] == 0x47 && bytes[j + Self.packetSize] == 0x47) { j += 1 }
                guard j + Self.packetSize < bytes.endIndex else { break }
                i = j
                continue
            }
            let packet = bytes[i..<(i + Self.packetSize)]
            i += Self.packetSize
            try packetStep(packet) { payload, pts in
                if !ptsTaken { firstPTS = pts; ptsTaken = true }
                output += payload
            }
        }
        if flush, let (payload, pts) = try finishPES() {
            if !ptsTaken { firstPTS = pts }
            output += payload
        }
        guard let codec else {
            if pmtPID == nil {
                throw FormatError.invalid(component: Self.component, reason: "no program association table (PAT)", offset: 0)
            }
            if audioPID == nil && !seenStreamTypes.isEmpty {
                let types = seenStreamTypes.map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
                throw FormatError.unsupported(component: Self.component,
                                              reason: "no MP3 or AAC (ADTS) audio stream (stream types \(types))")
            }
            throw FormatError.invalid(component: Self.component, reason: "no program map table (PMT)", offset: 0)
        }
        return TSDemuxedAudio(elementaryStream: output, firstPTS: firstPTS, codec: codec)
    }

    /// One 188-byte packet: tables go to the section parser, the audio PID to the PES assembler.
    private mutating func packetStep(_ packet: ArraySlice<UInt8>,
                                     _ emit: (ArraySlice<UInt8>, UInt64?) throws -> Void) throws {
        let b = packet.startIndex
        let unitStart = packet[b + 1] & 0x40 != 0
        let pid = Int(packet[b + 1] & 0x1F) << 8 | Int(packet[b + 2])
        let scrambling = packet[b + 3] >> 6
        let adaptation = (packet[b + 3] >> 4) & 0x3
        var payloadStart = b + 4
        if adaptation & 0x2 != 0 {
            payloadStart += 1 + Int(packet[b + 4])
        }
        guard adaptation & 0x1 != 0, payloadStart < packet.endIndex else { return }
        let payload = packet[payloadStart...]
        if pid == 0 || pid == pmtPID {
            try sectionStep(pid: pid, payload, unitStart: unitStart)
            return
        }
        guard pid == audioPID else { return }
        guard scrambling == 0 else {
            throw FormatError.unsupported(component: Self.component, reason: "scrambled (encrypted) transport stream packets")
        }
        if unitStart {
            if let (bytes, pts) = try finishPES() { try emit(bytes, pts) }
        } else if pes.isEmpty {
            return          // the middle of a PES whose start we did not see
        }
        guard pes.count + payload.count <= maxPESBytes else {
            throw FormatError.invalid(component: Self.component, reason: "PES packet larger than \(maxPESBytes) bytes", offset: 0)
        }
        pes += payload
    }

    /// Parses the PES packet assembled so far and clears it: its payload and PTS.
    private mutating func finishPES() throws -> (ArraySlice<UInt8>, UInt64?)? {
        guard !pes.isEmpty else { return nil }
        defer { pes.removeAll(keepingCapacity: true) }
        var reader = ByteReader(pes, component: Self.component)
        guard pes.count >= 9, try reader.readU24BE() == 1 else { return nil }     // not a PES start: drop it
        _ = try reader.readU8()                                                    // stream_id
        let length = Int(try reader.readU16BE())
        let flags = try reader.readU16BE()
        let headerLength = Int(try reader.readU8())
        guard flags >> 14 == 0b10, reader.remaining >= headerLength else { return nil }
        var pts: UInt64?
        if flags & 0x0080 != 0, headerLength >= 5 {
            let p = try reader.readBytes(5).map(UInt64.init)
            let base = p.startIndex
            pts = (p[base] >> 1 & 0x07) << 30 | p[base + 1] << 22 | (p[base + 2] >> 1) << 15 | p[base + 3] << 7 | p[base + 4] >> 1
            try reader.skip(headerLength - 5)
        } else {
            try reader.skip(headerLength)
        }
        var payload = reader.rest
        if length > 0 {
            // PES_packet_length counts the bytes after it: 3 header bytes, the header data, the payload.
            let payloadLength = max(0, length - 3 - headerLength)
            payload = payload.prefix(payloadLength)
        }
        return (Array(payload)[...], pts)
    }

    /// PAT and PMT sections, which may span packets.
    private mutating func sectionStep(pid: Int, _ payload: ArraySlice<UInt8>, unitStart: Bool) throws {
        var data = payload
        if unitStart {
            let pointer = Int(data.first ?? 0)
            data = data.dropFirst(1 + pointer)
            sections[pid] = Array(data)
        } else {
            guard var partial = sections[pid], !partial.isEmpty else { return }
            partial += data
            sections[pid] = partial
        }
        guard let section = sections[pid], section.count >= 3 else { return }
        let sectionLength = Int(section[1] & 0x0F) << 8 | Int(section[2])
        guard section.count >= 3 + sectionLength else {
            if section.count > 4096 { sections[pid] = [] }
            return
        }
        sections[pid] = []
        let body = section[0..<(3 + sectionLength)]
        if pid == 0 { try parsePAT(body) } else { try parsePMT(body) }
    }

    private mutating func parsePAT(_ section: ArraySlice<UInt8>) throws {
        var reader = ByteReader(section, component: Self.component)
        guard try reader.readU8() == 0x00 else { return }          // table_id: program_association_section
        let length = Int(try reader.readU16BE() & 0x0FFF)
        try reader.skip(5)                                           // transport_stream_id, version, section numbers
        // Programs (4 bytes each) until the CRC.
        var programs = try reader.subReader(max(0, length - 5 - 4))
        while programs.remaining >= 4 {
            let number = try programs.readU16BE()
            let pid = Int(try programs.readU16BE() & 0x1FFF)
            if number != 0 {
                if pmtPID != pid { audioPID = nil }
                pmtPID = pid
                return                                               // HLS: one program per stream
            }
        }
    }

    private mutating func parsePMT(_ section: ArraySlice<UInt8>) throws {
        var reader = ByteReader(section, component: Self.component)
        guard try reader.readU8() == 0x02 else { return }          // table_id: TS_program_map_section
        let length = Int(try reader.readU16BE() & 0x0FFF)
        try reader.skip(5)
        _ = try reader.readU16BE()                                   // PCR_PID
        let infoLength = Int(try reader.readU16BE() & 0x0FFF)
        try reader.skip(infoLength)
        var streams = try reader.subReader(max(0, length - 9 - infoLength - 4))
        var types: [UInt8] = []
        var found: (pid: Int, codec: TSAudioCodec)?
        while streams.remaining >= 5 {
            let type = try streams.readU8()
            let pid = Int(try streams.readU16BE() & 0x1FFF)
            let esInfo = Int(try streams.readU16BE() & 0x0FFF)
            try streams.skip(esInfo)
            types.append(type)
            guard found == nil else { continue }
            switch type {
            case 0x0F: found = (pid, .adts)
            case 0x03, 0x04: found = (pid, .mpeg)
            case 0xCF, 0xDB, 0xC1, 0xC2:
                throw FormatError.unsupported(component: Self.component, reason: "SAMPLE-AES encrypted audio (stream type 0x\(String(type, radix: 16)))")
            default: break
            }
        }
        seenStreamTypes = types
        if let found {
            if audioPID != found.pid { pes = [] }
            audioPID = found.pid
            codec = found.codec
        } else {
            audioPID = nil
            codec = nil
        }
    }

    /// The first bytes, quoted as text when they are printable (HTML), else in hex.
    static func describe(_ bytes: ArraySlice<UInt8>) -> String {
        if !bytes.isEmpty, bytes.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return "'" + String(decoding: bytes.map { $0 < 0x20 ? UInt8(ascii: " ") : $0 }, as: UTF8.self) + "'"
        }
        return bytes.isEmpty ? "nothing" : bytes.prefix(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined(separator: " ")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
