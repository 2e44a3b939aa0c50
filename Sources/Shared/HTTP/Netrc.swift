/// The `~/.netrc` file as curl and mpv read it, for streamplay's credentials
/// (`ServerCredentials`). Kept here, apart from the client, so the fuzzer reaches it (`credentials`).
public enum Netrc {
    /// `machine HOST login USER password PASS` entries of a netrc file (whitespace-separated
    /// tokens, `macdef` bodies skipped; `default` is not used: its password would go to any host).
    public static func entries(_ text: String) -> [(host: String, login: String, password: String)] {
        var entries: [(host: String, login: String, password: String)] = []
        // Read by Unicode scalars, as curl reads bytes: a CRLF line end or a blank followed by a
        // combining mark is still a line end and a blank (as Characters they are neither).
        var tokens: [String] = []
        var inMacro = false
        for line in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if inMacro {
                if words.isEmpty { inMacro = false }
                continue
            }
            if let first = words.first, String(String.UnicodeScalarView(first)) == "macdef" {
                inMacro = true
                continue
            }
            tokens += words.map { String(String.UnicodeScalarView($0)) }
        }
        var i = 0
        var machine: String?, login: String?, password: String?
        func flush() {
            if let machine, let login, let password { entries.append((machine, login, password)) }
            machine = nil; login = nil; password = nil
        }
        while i < tokens.count {
            let word = tokens[i]
            // curl 7.84+ takes "quoted" values (without spaces in them here).
            var value = i + 1 < tokens.count ? tokens[i + 1] : nil
            if let quoted = value, quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") {
                value = String(quoted.dropFirst().dropLast())
            }
            switch word {
            case "machine": flush(); machine = value?.lowercased(); i += 2
            case "default": flush(); i += 1
            case "login": login = value; i += 2
            case "password": password = value; i += 2
            case "account": i += 2
            default: i += 1
            }
        }
        flush()
        return entries
    }
}
