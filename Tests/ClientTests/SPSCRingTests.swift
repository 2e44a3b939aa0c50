import Dispatch
import Foundation
import Testing
@testable import StreamClient

/// The ring between the decode and output threads: samples used in place, and wake-ups only
/// once the waiting side's amount is there.
@Suite struct SPSCRingTests {
    private func fill(_ ring: SPSCRing, from first: Int, count: Int) -> Int {
        let values = (first..<(first + count)).map(Float.init)
        return values.withUnsafeBufferPointer { ring.write($0) }
    }

    @Test func readable_givesTheContiguousPartThenTheRestAfterTheWrap() {
        let ring = SPSCRing(capacity: 8)
        #expect(fill(ring, from: 0, count: 6) == 6)
        ring.consume(ring.readable(max: 6).count)          // read position 6
        #expect(fill(ring, from: 100, count: 5) == 5)      // 6, 7, then 0, 1, 2 after the wrap
        let first = ring.readable(max: 100)
        #expect(Array(first) == [100, 101])
        ring.consume(first.count)
        let second = ring.readable(max: 2)
        #expect(Array(second) == [102, 103])
        ring.consume(second.count)
        #expect(Array(ring.readable(max: 100)) == [104])
        ring.consume(1)
        #expect(ring.readable(max: 100).isEmpty)
        #expect(ring.availableToWrite == 8)
    }

    @Test func readable_inPlaceChangesAreWhatIsConsumed() {
        let ring = SPSCRing(capacity: 4)
        _ = fill(ring, from: 1, count: 4)
        let span = ring.readable(max: 4)
        for i in span.indices { span[i] *= -1 }
        #expect(ring.availableToWrite == 0)               // not free until consumed
        ring.consume(span.count)
        #expect(ring.availableToWrite == 4)
        #expect(fill(ring, from: 9, count: 4) == 4)
        #expect(Array(ring.readable(max: 4)) == [9, 10, 11, 12])
    }

    @Test func waitForData_sleepsUntilItsAmountIsThere() {
        let ring = SPSCRing(capacity: 1024)
        let producer = Thread {
            for piece in 0..<10 {
                Thread.sleep(forTimeInterval: 0.02)
                _ = self.fill(ring, from: piece * 50, count: 50)
            }
        }
        producer.start()
        let started = DispatchTime.now()
        ring.waitForData(atLeast: 500, timeout: 10)
        let waited = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        // Woken by the write that completed the 500 samples: not by the first pieces, not by the timeout.
        #expect(ring.availableToRead == 500)
        #expect(waited < 5)
    }

    @Test func wakeConsumer_endsTheWaitWithFewerSamples() {
        let ring = SPSCRing(capacity: 1024)
        let producer = Thread {
            Thread.sleep(forTimeInterval: 0.05)
            _ = self.fill(ring, from: 0, count: 10)
            ring.wakeConsumer()
        }
        producer.start()
        let started = DispatchTime.now()
        ring.waitForData(atLeast: 1000, timeout: 10)
        let waited = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        #expect(ring.availableToRead == 10)
        #expect(waited < 5)
    }

    @Test func waitForSpace_sleepsUntilItsAmountIsFree() {
        let ring = SPSCRing(capacity: 400)
        _ = fill(ring, from: 0, count: 400)
        let consumer = Thread {
            var scratch = [Float](repeating: 0, count: 25)
            for _ in 0..<8 {
                Thread.sleep(forTimeInterval: 0.02)
                _ = scratch.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            }
        }
        consumer.start()
        let started = DispatchTime.now()
        ring.waitForSpace(atLeast: 200, timeout: 10)
        let waited = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        #expect(ring.availableToWrite >= 200)
        #expect(waited < 5)
    }

    @Test func waits_askingForMoreThanTheCapacity_waitForAFullRing() {
        let ring = SPSCRing(capacity: 16)
        _ = fill(ring, from: 0, count: 16)
        ring.waitForData(atLeast: 1 << 30, timeout: 10)   // capped at the capacity: returns at once
        #expect(ring.availableToRead == 16)
    }
}
