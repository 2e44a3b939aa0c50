import Glibc
import StreamClient
import StreamShared

extension StreamPlay {
    /// `--user NAME`: reads the password (from the terminal without echo, or one line of stdin
    /// when it is not a terminal; never from the command line, which every user of the machine
    /// can read) and sends it as Basic credentials to the hosts of the URLs given.
    func logIn(as user: String) throws {
        let password = try Self.readPassword(prompt: "Password for \(user): ")
        for source in sources {
            guard let url = try? HTTPURL(source) else { continue }
            ServerCredentials.set(.basic(user: user, password: password), host: url.host, port: url.port)
        }
    }

    static func readPassword(prompt: String) throws(UsageError) -> String {
        if isatty(STDIN_FILENO) == 1 {
            _ = prompt.withCString { write(STDERR_FILENO, $0, strlen($0)) }
            var saved = termios()
            tcgetattr(STDIN_FILENO, &saved)
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
            let line = readLine(strippingNewline: true)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            _ = write(STDERR_FILENO, "\n", 1)
            guard let line, !line.isEmpty else { throw UsageError("--user: no password given") }
            return line
        }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw UsageError("--user: no password on stdin (one line expected)")
        }
        return line
    }
}
