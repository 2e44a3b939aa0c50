import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A command run in a detached tmux window, for the tests of streamplay's keys and status line.
/// Each session has its own tmux server (its socket in the test's scratch folder, no config file),
/// started by the test process: its
/// windows inherit this process's environment (a sanitized run's ASAN_OPTIONS, whose log_path puts
/// a report where `make sanitize` finds it) and never share a server with another run or a person.
final class TerminalSession {
    let name: String
    private let tmux: String
    private let socket: String
    private let capture: String

    /// Starts `command` (a shell line) in a window of `width` x 10 characters; throws when tmux is
    /// missing or the session does not start.
    init(_ label: String, command: String, width: Int, scratch: URL) throws {
        guard let tmux = which("tmux") else { throw TestFailure("tmux is installed by make deps") }
        self.tmux = tmux
        name = "streamplay-\(label)-\(getpid())"
        socket = scratch.appendingPathComponent("tmux-\(label).sock").path
        capture = scratch.appendingPathComponent("screen-\(label).txt").path
        let quoted = "'" + command.replacingOccurrences(of: "'", with: "'\\''") + "'"
        guard run("-f /dev/null new-session -d -s \(name) -x \(width) -y 10 \(quoted)") == 0 else {
            throw TestFailure("tmux could not start the session \(name)")
        }
    }

    deinit { stop() }

    /// Ends the window and its server.
    func stop() {
        _ = run("kill-server")
        unlink(socket)
    }

    /// Types `keys` (tmux key names, each quoted as tmux reads them).
    func send(_ keys: String) { _ = run("send-keys -t \(name) \(keys)") }

    /// What the window shows now.
    func screen() -> String {
        _ = system("\(tmux) -S \(socket) capture-pane -p -t \(name) > \(capture) 2>/dev/null </dev/null")
        return (try? String(contentsOfFile: capture, encoding: .utf8)) ?? ""
    }

    /// The screen once `done` holds for it, or as it is after `seconds` (stretched by the test time
    /// scale). Polled, not read after fixed sleeps: a sanitized build answers keys several times slower.
    func screen(within seconds: Double, until done: (String) -> Bool) -> String {
        let deadline = Date().addingTimeInterval(TestTiming.seconds(seconds))
        var shown = screen()
        while !done(shown) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            shown = screen()
        }
        return shown
    }

    /// The screen once it shows `text`, or as it is after `seconds`.
    func screen(within seconds: Double, showing text: String) -> String {
        screen(within: seconds) { $0.contains(text) }
    }

    /// tmux through system(3): its server outlives the client that starts it, so only the shell is
    /// waited for, never the server's inherited descriptors.
    private func run(_ arguments: String) -> Int32 {
        system("\(tmux) -S \(socket) \(arguments) </dev/null >/dev/null 2>&1")
    }
}
