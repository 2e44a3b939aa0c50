import Testing
@testable import StreamServer
@testable import StreamRadio
@testable import StreamHLS
@testable import StreamLibrary
@testable import StreamHTTP

@Suite struct TimerHeapTests {
    @Test func popDue_returnsTheDueEntriesEarliestFirst_andKeepsTheRest() {
        var heap = TimerHeap()
        var generator = SystemRandomNumberGenerator()
        var times: [UInt64] = []
        for i in 0..<500 {
            let time = UInt64.random(in: 0..<1_000, using: &generator)
            times.append(time)
            heap.push(.init(time: time, fd: Int32(i), generation: 1))
        }
        #expect(heap.count == 500)
        let due = heap.popDue(now: 499)
        #expect(due.map(\.time) == times.filter { $0 <= 499 }.sorted(), "every entry due, in time order")
        #expect(heap.earliest.map { $0 > 499 } ?? true, "none left that is due")
        let rest = heap.popDue(now: .max)
        #expect(rest.map(\.time) == times.filter { $0 > 499 }.sorted(), "the others later, in order")
        #expect(heap.count == 0 && heap.earliest == nil)
    }

    @Test func equalTimes_andNothingDue() {
        var heap = TimerHeap()
        #expect(heap.popDue(now: 10).isEmpty, "an empty heap has nothing due")
        for fd in 0..<5 { heap.push(.init(time: 7, fd: Int32(fd), generation: 2)) }
        heap.push(.init(time: 3, fd: 9, generation: 1))
        #expect(heap.popDue(now: 2).isEmpty, "nothing before its time")
        #expect(heap.earliest == 3)
        let due = heap.popDue(now: 7)
        #expect(due.count == 6 && due.first?.fd == 9, "the earliest first, then all five equal ones")
        #expect(Set(due.dropFirst().map(\.fd)) == [0, 1, 2, 3, 4])
    }
}
