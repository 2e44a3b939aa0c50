#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
internal import CLinux

/// A POSIX thread running one closure: the network, decode-side and output threads, and the
/// terminal's. `join()` waits for a joinable one to end; `detach` starts one nobody waits for.
public final class NativeThread {
    private var thread: pthread_t?

    /// What the new thread runs, passed to it through pthread_create's argument.
    private final class Start {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    /// Starts `body` on a new joinable thread named `name` (the first 15 bytes, as Linux keeps).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        thread = try Self.spawn(name: name, body)
    }

    /// Starts `body` on a thread that is never joined.
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        let thread = try spawn(name: name, body)
        pthread_detach(thread)
    }

    /// Waits for the thread to end (once; later calls return at once).
    public func join() {
        guard let thread else { return }
        self.thread = nil
        pthread_join(thread, nil)
    }

    deinit { if let thread { pthread_detach(thread) } }

    private static func spawn(name: String, _ body: @escaping () -> Void) throws(ThreadError) -> pthread_t {
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let start = Unmanaged<Start>.fromOpaque(argument).takeRetainedValue()
            pthread_setname_np(pthread_self(), String(decoding: start.name.utf8.prefix(15), as: UTF8.self))
            start.body()
            return nil
        }, start)
        guard result == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw ThreadError(name: name, errno: result)
        }
        return thread
    }
}

/// A thread could not be started (pthread_create failed: out of memory or the thread limit).
public struct ThreadError: Error, CustomStringConvertible, Sendable {
    public var name: String
    public var errno: Int32
    public var description: String { "cannot start thread \(name): \(String(cString: strerror(errno)))" }
}
