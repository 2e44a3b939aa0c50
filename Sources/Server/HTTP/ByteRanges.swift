/// The outcome of reading a `Range` header against a representation of `size` bytes (RFC 9110 14.2).
public enum RangeRequest: Equatable, Sendable {
    /// No usable Range header: send the whole representation with 200.
    case full
    /// One or more satisfiable ranges (inclusive lower bound, exclusive upper bound), in request
    /// order; when any overlap or touch, merged and in ascending order, so they never add up to
    /// more than the representation.
    case ranges([Range<Int>])
    /// Every range lies past the end: 416 with `Content-Range: bytes */size`.
    case unsatisfiable

    /// Most ranges accepted in one request; more is treated as abuse and answered in full
    /// (RFC 9110 section 14.2 lets a server ignore such a Range).
    public static let maxRanges = 16

    /// Parses `header` (e.g. `bytes=0-99, -500`). A syntactically invalid header is ignored
    /// (RFC 9110 14.2: the server may ignore it), so it yields `.full`.
    public static func parse(_ header: String?, size: Int) -> RangeRequest {
        guard let header else { return .full }
        let trimmed = header.trimmingCharacters(in: " \t")
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .full }
        let specs = trimmed.dropFirst(6).split(separator: ",", omittingEmptySubsequences: false)
        guard !specs.isEmpty, specs.count <= maxRanges else { return .full }
        var result: [Range<Int>] = []
        for rawSpec in specs {
            let spec = rawSpec.trimmingCharacters(in: " \t")
            guard let dash = spec.firstIndex(of: "-") else { return .full }
            let first = spec[..<dash], last = spec[spec.index(after: dash)...]
            if first.isEmpty {
                // Suffix range: the last N bytes.
                guard let n = parseDigits(last) else { return .full }
                if n == 0 || size == 0 { continue }
                result.append(max(0, size - n)..<size)
            } else {
                guard let start = parseDigits(first) else { return .full }
                var end = size - 1
                if !last.isEmpty {
                    guard let value = parseDigits(last), value >= start else { return .full }
                    end = min(value, size - 1)
                }
                if start >= size { continue }
                result.append(start..<(end + 1))
            }
        }
        return result.isEmpty ? .unsatisfiable : .ranges(coalesced(result))
    }

    /// RFC 9110 section 14.3: ranges that overlap or touch may be coalesced. When any do, all are
    /// merged in ascending order (sixteen copies of `0-` become one); otherwise the request order stays.
    static func coalesced(_ ranges: [Range<Int>]) -> [Range<Int>] {
        guard ranges.count > 1 else { return ranges }
        var merged: [Range<Int>] = []
        var overlapped = false
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                overlapped = true
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return overlapped ? merged : ranges
    }

    /// Digits only, no sign, and no overflow (a 40-digit number is invalid, not a trap).
    private static func parseDigits<S: StringProtocol>(_ text: S) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int(text)
    }
}
