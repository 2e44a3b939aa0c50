#if canImport(Glibc)
import Glibc
#endif

/// RFC 9110 IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") and its parser for If-Modified-Since.
package enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    package static func format(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Parses IMF-fixdate only (the form every current client sends); nil otherwise.
    static func parse(_ text: String) -> Int? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT",
              let day = Int(fields[1]), let monthIndex = months.firstIndex(of: String(fields[2])),
              let year = Int(fields[3]) else { return nil }
        let clock = fields[4].split(separator: ":")
        guard clock.count == 3, let h = Int(clock[0]), let m = Int(clock[1]), let s = Int(clock[2]),
              (1...31).contains(day), (1970...9999).contains(year), h < 24, m < 60, s < 61 else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(monthIndex)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(h)
        parts.tm_min = Int32(m)
        parts.tm_sec = Int32(s)
        return Int(timegm(&parts))
    }
}
