import CLinux
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StreamHTTP
import StreamShared

/// A child process started with `posix_spawn`, its stdin, stdout and stderr on pipes: the one
/// place streamd starts processes (Foundation's `Process` forks from a helper thread and
/// installs a SIGCHLD handler; this does neither).
///
/// The child gets only those three descriptors (everything from 3 up is closed), an empty
/// signal mask, default handlers for the signals the server blocks or ignores, and its own
/// process group, so a Ctrl-C at the terminal does not reach it. Not thread-safe: one owner.
package final class ChildProcess {
    /// How the child ended.
    package enum Termination: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        package var description: String {
            switch self {
            case .exited(let status): return "exit status \(status)"
            case .signalled(let signal): return "signal \(signal)"
            }
        }
    }

    let pid: pid_t
    /// Write end of the child's stdin; -1 once closed.
    package private(set) var input: Int32
    /// Read end of the child's stdout (non-blocking).
    package let output: Int32
    /// Read end of the child's stderr (non-blocking).
    package let errors: Int32
    private(set) var termination: Termination?

    /// Starts one of streamd's workers (analysis, decoding, cover resizing): `executable` with
    /// `arguments`, this process's environment with `overrides` on top and the backtracer off,
    /// since a trapping worker should die at once (symbolicating would take seconds). SIGPIPE is
    /// ignored first: a worker that dies leaves its stdin without a reader, and a write to it must
    /// fail with EPIPE, not kill this process (streamd ignores it anyway; tests may not).
    package static func worker(executable: String, arguments: [String], overrides: [String: String]) throws(SystemError) -> ChildProcess {
        signal(SIGPIPE, SIG_IGN)
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.merge(overrides) { _, new in new }
        return try ChildProcess(executable: executable, arguments: arguments, environment: environment.map { "\($0.key)=\($0.value)" })
    }

    /// Starts `executable` with `arguments` (argv[0] excluded) and `environment` ("NAME=value").
    package init(executable: String, arguments: [String], environment: [String]) throws(SystemError) {
        let stdinPipe = try Self.pipe()
        let stdoutPipe: (read: Int32, write: Int32)
        let stderrPipe: (read: Int32, write: Int32)
        do {
            stdoutPipe = try Self.pipe()
        } catch {
            Self.close(stdinPipe.read, stdinPipe.write)
            throw error
        }
        do {
            stderrPipe = try Self.pipe()
        } catch {
            Self.close(stdinPipe.read, stdinPipe.write, stdoutPipe.read, stdoutPipe.write)
            throw error
        }
        // The parent's ends never block: the owner waits with poll and a deadline.
        for fd in [stdoutPipe.read, stderrPipe.read] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe.write, 2)
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([executable] + arguments).map { strdup($0) }
        let envp = environment.map { strdup($0) }
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let status = (argv + [nil]).withUnsafeBufferPointer { args in
            (envp + [nil]).withUnsafeBufferPointer { env -> Int32 in
                guard let args = args.baseAddress, let env = env.baseAddress else { return EINVAL }
                return posix_spawn(&child, executable, &actions, &attributes, args, env)
            }
        }
        Self.close(stdinPipe.read, stdoutPipe.write, stderrPipe.write)
        guard status == 0 else {
            Self.close(stdinPipe.write, stdoutPipe.read, stderrPipe.read)
            throw SystemError(call: "posix_spawn", errno: status)
        }
        pid = child
        input = stdinPipe.write
        output = stdoutPipe.read
        errors = stderrPipe.read
        // Started after the shutdown killed the others: this one goes the same way.
        if Self.registry.add(child, executable) { _ = Glibc.kill(child, SIGKILL) }
    }

    // MARK: Every child of the process

    private static let registry = ChildRegistry()

    /// The children started and not yet reaped (pid and program), process-wide.
    package static var unreaped: [(pid: pid_t, executable: String)] { registry.list() }

    /// Shutdown: every child not yet reaped is killed (SIGKILL), and any started from now on
    /// too. Each owner still reaps its own (its wait sees the end at once). Returns how many.
    @discardableResult
    package static func killAll() -> Int { registry.killAll() }

    /// Whether `killAll` was called: a child that ends now was killed by the shutdown, not by
    /// what it was given (an analysis is then not held against its file).
    package static var isShuttingDown: Bool { registry.isShuttingDown }

    /// Closes the child's stdin: a well-behaved child reads end-of-file and exits.
    package func closeInput() {
        if input >= 0 { Glibc.close(input) }
        input = -1
    }

    /// Sends SIGKILL (nothing happens once the child has been reaped).
    package func kill() {
        guard termination == nil else { return }
        _ = Glibc.kill(pid, SIGKILL)
    }

    /// Waits for the child to end (waitpid) and remembers how it ended.
    @discardableResult
    package func wait() -> Termination {
        if let termination { return termination }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            // ECHILD: someone else reaped it (never in streamd); report it as killed.
            guard errno == EINTR else {
                Self.registry.remove(pid)
                termination = .signalled(SIGKILL)
                return .signalled(SIGKILL)
            }
        }
        let ended = Self.decode(status)
        termination = ended
        Self.registry.remove(pid)
        return ended
    }

    /// The termination if the child has already ended, without blocking.
    func poll() -> Termination? {
        if let termination { return termination }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let ended = Self.decode(status)
        termination = ended
        Self.registry.remove(pid)
        return ended
    }

    /// Closes stdin and gives the child `graceNanos` to exit, then kills it; always reaps it.
    package func stop(graceNanos: UInt64 = 1_000_000_000) {
        closeInput()
        let deadline = monotonicNanos() + graceNanos
        while poll() == nil {
            if monotonicNanos() >= deadline {
                kill()
                wait()
                return
            }
            usleep(5_000)
        }
    }

    deinit {
        if termination == nil {
            kill()
            wait()
        }
        closeInput()
        Self.close(output, errors)
    }

    /// WIFEXITED/WIFSIGNALED are macros Swift does not import: the bit layout is Linux's.
    private static func decode(_ status: Int32) -> Termination {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    /// A close-on-exec pipe whose ends are at 3 or above, so the dup2 onto 0, 1 and 2 cannot collide.
    private static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe2(&fds, O_CLOEXEC) == 0 else { throw SystemError(call: "pipe2", errno: errno) }
        for i in fds.indices where fds[i] < 3 {
            let moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)
            let code = errno
            Glibc.close(fds[i])
            guard moved >= 0 else {
                close(fds[1 - i])
                throw SystemError(call: "fcntl", errno: code)
            }
            fds[i] = moved
        }
        return (fds[0], fds[1])
    }

    private static func close(_ fds: Int32...) {
        for fd in fds where fd >= 0 { Glibc.close(fd) }
    }
}

/// The children of this process not yet reaped, for the shutdown's account.
private final class ChildRegistry: Sendable {
    private struct State {
        var children: [pid_t: String] = [:]
        var shuttingDown = false
    }
    private let state = Lock(State())

    /// Adds a child; true when the shutdown has begun (the caller kills it).
    func add(_ pid: pid_t, _ executable: String) -> Bool {
        state.withLock { state in
            state.children[pid] = executable
            return state.shuttingDown
        }
    }

    func remove(_ pid: pid_t) { state.withLock { _ = $0.children.removeValue(forKey: pid) } }

    func list() -> [(pid: pid_t, executable: String)] {
        state.withLock { $0.children.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }

    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    func killAll() -> Int {
        state.withLock { state in
            state.shuttingDown = true
            for pid in state.children.keys { _ = kill(pid, SIGKILL) }
            return state.children.count
        }
    }
}
