import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// Thin static wrappers over epoll and eventfd (the corresponding C calls are named on each).
enum Epoll {
    static let readable = UInt32(EPOLLIN.rawValue)
    static let writable = UInt32(EPOLLOUT.rawValue)
    static let exclusive = UInt32(EPOLLEXCLUSIVE.rawValue)

    /// `epoll_create1(EPOLL_CLOEXEC)`.
    static func create() throws(SystemError) -> Int32 {
        try syscallChecked("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    /// `epoll_ctl(EPOLL_CTL_ADD)`; `data` comes back with every event for this descriptor.
    static func add(_ epfd: Int32, fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        try syscallChecked("epoll_ctl(ADD)") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) }
    }

    /// `epoll_ctl(EPOLL_CTL_MOD)`.
    static func modify(_ epfd: Int32, fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        try syscallChecked("epoll_ctl(MOD)") { epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &event) }
    }

    /// `epoll_ctl(EPOLL_CTL_DEL)`; errors are ignored because the fd is closed right after.
    static func remove(_ epfd: Int32, fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &event)
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`: wakes a loop from another thread.
    static func makeEventFD() throws(SystemError) -> Int32 {
        try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
    }

    static func signal(eventFD fd: Int32) {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(fd, $0.baseAddress, 8) }
    }

    static func drain(eventFD fd: Int32) {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { read(fd, $0.baseAddress, 8) }
    }
}
