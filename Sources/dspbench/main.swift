import Foundation
import StreamClient
import StreamShared

let rate = 44_100
func tone(_ f: Double, _ s: Double) -> [Float] {
    let n = Int(s * Double(rate)); var o = [Float](repeating: 0, count: n * 2)
    for i in 0..<n { let v = Float(0.5 * sin(2 * .pi * f * Double(i) / Double(rate))); o[2*i] = v; o[2*i+1] = v }
    return o
}
let input = tone(440, 8)
let chain = DSPChain()
try chain.configure(input: AudioFormat(sampleRate: rate, channels: 2))
var out: [Float] = []
var offset = 0, index = 0
while offset < input.count {
    switch index {
    case 10: chain.set(rate: 2)
    case 25: chain.set(rate: 0.5)
    case 40: chain.set(semitones: 5)
    case 55: chain.set(eq: .graphic([0, 0, 0, 0, 3, 3, 0, 0, 0, 0]))
    case 60: chain.set(eq: .graphic([0, 0, 0, 0, -3, 6, 0, 0, 0, 0]))
    case 65: chain.set(rate: 1); chain.set(semitones: 0)
    default: break
    }
    var b = Array(input[offset..<min(input.count, offset + 8192)])
    chain.process(&b)
    print("block \(index): out frames \(out.count/2) + \(b.count/2)")
    out += b; offset += 8192; index += 1
}
// largest steps
var steps: [(Float, Int)] = []
for n in 1..<(out.count/2) { steps.append((abs(out[2*n] - out[2*n-2]), n)) }
steps.sort { $0.0 > $1.0 }
print(steps.prefix(10))
let at = steps[0].1
print(out[(2*(at-10))..<(2*(at+10))].enumerated().filter { $0.offset % 2 == 0 }.map { $0.element })
