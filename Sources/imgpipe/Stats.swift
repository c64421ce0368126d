import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Counts what the pipeline did, from its events: for the summaries and the progress bar.
final class Stats: Sendable {
    struct Counts {
        var memory = 0, disk = 0, network = 0, revalidated = 0
        var bytesLoaded = 0
        /// Downloads: `ImagePipelineEvent.loaded` events, one per fetch URL a loader delivered.
        var downloads = 0
        var decodeSeconds = 0.0
        var failures: [(String, String)] = []
    }

    private let counts = Mutex(Counts())

    var record: @Sendable (ImagePipelineEvent) -> Void {
        { event in
            self.counts.withLock { counts in
                switch event {
                case .completed(_, let source, _):
                    switch source {
                    case .memory, .processedFromMemory: counts.memory += 1
                    case .disk, .rendition: counts.disk += 1
                    case .network, .local, .loader: counts.network += 1
                    case .revalidated: counts.revalidated += 1
                    }
                case .loaded(_, let bytes):
                    counts.bytesLoaded += bytes
                    counts.downloads += 1
                case .decoded(_, let seconds): counts.decodeSeconds += seconds
                case .failed(let request, let error): counts.failures.append((Sources.label(request.url), Console.oneLine("\(error)")))
                default: break
                }
            }
        }
    }

    var snapshot: Counts { counts.withLock { $0 } }

    /// The plain summary printed at the end.
    func summary(total: Int, seconds: Double) -> String {
        let c = snapshot
        var lines = [printfFormat("%d pictures in %.2f s: %d from memory, %d from disk, %d revalidated, %d loaded (",
                                  total, seconds, c.memory, c.disk, c.revalidated, c.network)
                         + Self.bytes(c.bytesLoaded) + printfFormat("), decoding %.2f s", c.decodeSeconds)]
        if !c.failures.isEmpty {
            lines.append("\(c.failures.count) failed:")
            for (source, message) in c.failures { lines.append("  \(source): \(message)") }
        }
        return lines.joined(separator: "\n")
    }

    static func bytes(_ count: Int) -> String {
        count >= 1 << 20 ? printfFormat("%.1f MiB", Double(count) / 1_048_576)
            : count >= 1 << 10 ? printfFormat("%.1f KiB", Double(count) / 1024) : "\(count) bytes"
    }
}

/// A one-line progress bar on a terminal (count, rate, ETA); silent when stderr is not one.
final class ProgressBar: Sendable {
    private struct State { var done = 0; var lastDraw = 0.0 }
    private let total: Int
    private let start = Date()
    private let state = Mutex(State())
    let isTerminal = Console.standardErrorIsTerminal

    init(total: Int) { self.total = total }

    func advance() {
        guard isTerminal else { return }
        state.withLock { state in
            state.done += 1
            let elapsed = Date().timeIntervalSince(start)
            guard state.done == total || elapsed - state.lastDraw > 0.05 else { return }
            state.lastDraw = elapsed
            let rate = Double(state.done) / max(elapsed, 0.001)
            let eta = Double(total - state.done) / max(rate, 0.001)
            let width = 30
            let filled = total == 0 ? width : width * state.done / total
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let line = "\r[\(bar)] " + printfFormat("%d/%d  %.1f/s  ETA %.0fs ", state.done, total, rate, eta)
            Console.standardError.write(Data(line.utf8))
        }
    }

    /// Prints `message` on a line of its own on stderr; on a terminal, over the bar, which is
    /// drawn again at the next ``advance()``.
    func report(_ message: String) {
        guard isTerminal else { return printError(message) }
        state.withLock { _ in Console.standardError.write(Data(("\r\u{1B}[K" + Console.safeLines(message) + "\n").utf8)) }
    }

    func end() {
        if isTerminal { Console.standardError.write(Data("\n".utf8)) }
    }
}
