/// The wake times of one event loop's connections, earliest first (a binary min-heap), so a wake
/// of the loop costs O(log n) per due timer instead of a scan of every connection. Entries are
/// not removed when a connection's wake time changes or it closes: the loop checks a popped entry
/// against the connection (same fd and generation, its wake time still due), so a stale entry
/// costs one pop.
struct TimerHeap {
    struct Entry: Equatable {
        var time: UInt64
        var fd: Int32
        var generation: UInt32
    }

    private var items: [Entry] = []

    var count: Int { items.count }
    /// The earliest time, nil when empty.
    var earliest: UInt64? { items.first?.time }

    mutating func push(_ entry: Entry) {
        items.append(entry)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].time < items[parent].time else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns every entry due at `now` (time <= now), earliest first. Entries pushed
    /// while the caller handles these wait for the next call, so a connection that yields (due
    /// again at once) cannot keep one pass of the loop going.
    mutating func popDue(now: UInt64) -> [Entry] {
        var due: [Entry] = []
        while let first = items.first, first.time <= now {
            due.append(first)
            let last = items.removeLast()
            guard !items.isEmpty else { break }
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < items.count else { break }
                let right = left + 1
                let child = right < items.count && items[right].time < items[left].time ? right : left
                guard items[child].time < items[parent].time else { break }
                items.swapAt(child, parent)
                parent = child
            }
        }
        return due
    }
}
