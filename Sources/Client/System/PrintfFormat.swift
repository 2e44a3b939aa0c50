#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers formatted by C's printf rules (`"%g"`, `"%.2g"`), through `vsnprintf`: what
/// `String(format:)` gave, without Foundation. For numbers only; the text is at most 63 bytes.
public func printfFormat(_ format: String, _ arguments: CVarArg...) -> String {
    withVaList(arguments) { list in
        var buffer = [CChar](repeating: 0, count: 64)
        let written = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, list) }
        guard written >= 0 else { return "" }
        return String(decoding: buffer.prefix(min(Int(written), 63)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
