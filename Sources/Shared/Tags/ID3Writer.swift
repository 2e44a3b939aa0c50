/// Writes the small ID3v2.4 tags that HLS packed audio needs (RFC 8216 section 3.4).
public enum ID3Writer {
    /// The PRIV owner that carries a packed-audio segment's start time.
    public static let transportStreamTimestampOwner = "com.apple.streaming.transportStreamTimestamp"

    /// An ID3v2.4 tag holding one PRIV frame with the segment's start time in 90 kHz units:
    /// an 8-byte big-endian number of which only the low 33 bits count (an MPEG-2 PTS).
    public static func transportStreamTimestampTag(ticks90k: UInt64) -> [UInt8] {
        var payload = Array(transportStreamTimestampOwner.utf8)
        payload.append(0)
        let pts = ticks90k & ((1 << 33) - 1)
        for shift in stride(from: 56, through: 0, by: -8) { payload.append(UInt8(truncatingIfNeeded: pts >> UInt64(shift))) }
        return tag(frames: [frame(id: "PRIV", payload: payload)])
    }

    /// One ID3v2.4 frame: id, syncsafe size, no flags.
    public static func frame(id: String, payload: [UInt8]) -> [UInt8] {
        var out = Array(id.utf8.prefix(4))
        while out.count < 4 { out.append(0x20) }
        out += syncsafe(payload.count)
        out += [0, 0]
        return out + payload
    }

    /// An ID3v2.4 tag around already-encoded frames (no padding, no footer, no unsynchronisation).
    public static func tag(frames: [[UInt8]]) -> [UInt8] {
        let body = frames.flatMap { $0 }
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(body.count) + body
    }

    /// A 28-bit syncsafe integer: four bytes of seven bits each (sizes above 2^28 - 1 are clamped).
    static func syncsafe(_ value: Int) -> [UInt8] {
        let v = UInt32(max(0, min(value, (1 << 28) - 1)))
        return [UInt8((v >> 21) & 0x7F), UInt8((v >> 14) & 0x7F), UInt8((v >> 7) & 0x7F), UInt8(v & 0x7F)]
    }
}
