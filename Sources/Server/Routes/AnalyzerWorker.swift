#if canImport(Glibc)
import Glibc
#endif
import StreamShared
import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio

/// The child side of isolated analysis: `streamd analyze-worker` reads requests on stdin, runs
/// `TrackAnalyzer` on each file and writes the answers to stdout (`AnalyzerProtocol`). A parser
/// bug that traps or loops kills or stalls this process only; the server notices and skips the file.
public enum AnalyzerWorker {
    /// The hidden subcommand that runs the worker loop.
    public static let subcommand = AnalyzerProtocol.workerSubcommand
    /// The worker's own option for fault drills (`streamd analyze-worker --fault SPEC`): SPEC
    /// `trap:NAME,hang:NAME` makes the worker trap or spin on files of that name;
    /// `walktrap:NAME` traps only in the full walk (a file the quick scan lists); `walkhang:NAME`
    /// blocks there without using the CPU, as a read from a cold disk or a dead network mount does
    /// (a spinning hang would compete with the server's loop for a core, which is not what the
    /// loop tests measure);
    /// `delay:MS` makes every analysis take MS milliseconds more (a slow disk, a slow scan).
    /// The server never passes it: a drill starts the workers through `IsolatedAnalyzer.Settings`
    /// (streamd's hidden `--analyze-worker PROGRAM`) with a program that does.
    public static let faultOption = "--fault"

    /// Serves requests until stdin ends; returns the process exit status. `faultSpec` is the
    /// worker's `--fault` (empty: none).
    public static func run(faultSpec: String = "") -> Int32 {
        WorkerSide.becomeExpendable()
        let faults = Faults(faultSpec)
        guard WorkerSide.writeAll(AnalyzerProtocol.frame(AnalyzerProtocol.hello)) else { return 1 }
        var requests = WorkerRequests(chunkBytes: 64 * 1024)
        var armed = false
        while true {
            let payload: [UInt8]
            do {
                // Idle until the next request: no alarm meanwhile (a worker kept for a scan may
                // wait long). Between the requests of a batch, the next one re-arms it.
                let next = try requests.next(beforeWaiting: {
                    if armed {
                        alarm(0)
                        armed = false
                    }
                })
                guard let next else { return 0 }   // the server closed the pipe (or went away)
                payload = next
            } catch {
                return 2
            }
            guard let request = try? AnalyzerProtocol.parseRequest(payload) else { return 2 }
            // A second line of defence: should the server be gone, a stuck worker still ends.
            alarm(UInt32(request.timeoutMillis / 1000 + 5))
            armed = true
            let answer = analyze(request.path, mode: request.mode, faults: faults)
            guard WorkerSide.writeAll(AnalyzerProtocol.encode(answer)) else { return 1 }
        }
    }

    static func analyze(_ path: String, mode: AnalyzerProtocol.Mode = .full, faults: Faults) -> AnalyzerProtocol.Answer {
        faults.inject(for: path, mode: mode)
        do {
            let file = try OpenFile(path: path)
            // The quick look reads the same few kilobytes several times: once from the file.
            if mode == .quick { return .analysis(try TrackAnalyzer.describe(ReadAheadBytes(file))) }
            let analysis = try TrackAnalyzer.analyze(file)
            // The server plans HLS segments from this analysis and the file's tables (the MP4
            // moov is parsed again there); planning once here means a bug in that code costs
            // this worker, not a request. Its errors are the HLS route's business.
            _ = try? HLSTrackPlan.make(file: file, etag: file.etag, analysis: analysis)
            return .analysis(analysis)
        } catch {
            return .failure("\(error)")
        }
    }

    /// The faults `--fault` asks for: file names that make the worker trap or hang, a delay for all.
    struct Faults {
        var trapNames: Set<String> = []
        var walkTrapNames: Set<String> = []
        var hangNames: Set<String> = []
        var walkHangNames: Set<String> = []
        var delayMillis = 0

        init(_ spec: String) {
            for item in spec.split(separator: ",") {
                let parts = item.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                switch parts[0] {
                case "trap": trapNames.insert(String(parts[1]))
                case "walktrap": walkTrapNames.insert(String(parts[1]))
                case "hang": hangNames.insert(String(parts[1]))
                case "walkhang": walkHangNames.insert(String(parts[1]))
                case "delay": delayMillis = min(10_000, max(0, Int(parts[1]) ?? 0))
                default: continue
                }
            }
        }

        var isEmpty: Bool {
            trapNames.isEmpty && walkTrapNames.isEmpty && hangNames.isEmpty && walkHangNames.isEmpty && delayMillis == 0
        }

        func inject(for path: String, mode: AnalyzerProtocol.Mode) {
            guard !isEmpty else { return }   // the usual case: no name to look at
            if delayMillis > 0 { usleep(UInt32(delayMillis) * 1000) }
            let name = path.split(separator: "/").last.map(String.init) ?? path
            if trapNames.contains(name) || (mode == .full && walkTrapNames.contains(name)) {
                // The very trap issue 12 found: a Double too large for Int.
                let ticks = Double(UInt64.max) * Double(name.utf8.count + 1)
                if Int(ticks) != 0 { return }
            }
            if hangNames.contains(name) {
                while true { sched_yield() }
            }
            if mode == .full && walkHangNames.contains(name) {
                while true { pause() }
            }
        }
    }
}
