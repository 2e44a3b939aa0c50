/// ITU-T G.711 companding: 8-bit mu-law and A-law codes to 16-bit linear PCM.
public enum G711 {
    /// A mu-law code as a linear sample (14-bit range scaled to 16 bits, ±32124).
    public static func muLawToLinear(_ code: UInt8) -> Int16 {
        let u = ~code
        let exponent = Int(u >> 4 & 0x07)
        let mantissa = Int(u & 0x0F)
        // The bias 0x84 (132) is added before the shift so segment 0 joins segment 1 smoothly.
        let magnitude = ((mantissa << 3) + 0x84) << exponent - 0x84
        return Int16(u & 0x80 != 0 ? -magnitude : magnitude)
    }

    /// An A-law code as a linear sample (13-bit range scaled to 16 bits, ±32256).
    public static func aLawToLinear(_ code: UInt8) -> Int16 {
        let a = code ^ 0x55           // even bits are inverted on the line
        let exponent = Int(a >> 4 & 0x07)
        let mantissa = Int(a & 0x0F)
        // Each code stands for the middle of its step: +8 in segment 0, +0x108 (step and the implied 1) above.
        let magnitude = exponent == 0 ? mantissa << 4 + 8 : (mantissa << 4 + 0x108) << (exponent - 1)
        return Int16(a & 0x80 != 0 ? magnitude : -magnitude)
    }
}
