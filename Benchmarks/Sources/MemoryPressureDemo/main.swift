// Watches real memory pressure (Linux PSI) with a pipeline and prints every trim it causes:
// a demonstration of `ImagePipeline.watchMemoryPressure()`, driven by `memory-pressure.sh`.
//
//     MemoryPressureDemo [--cgroup DIR] [--seconds N] [--critical-ms MS]
//
// `--cgroup DIR` watches DIR/memory.pressure (a cgroup v2 directory) before
// /proc/pressure/memory. The memory cache holds 64 pictures of 256×256 (16 MiB) and is filled
// again after every trim, so each trim has something to free. Exits after a critical trim or
// after N seconds (default 60). `--critical-ms MS` sets the critical trigger to `full` MS ms in a
// 1 s window (default 500, `MemoryPressureTrigger.critical`), to see a critical trim under a
// milder load.
import Foundation
import MemoryPressureLinux
import PipelineCore

var cgroupRoot = "/sys/fs/cgroup"
var seconds = 60.0
var critical = MemoryPressureTrigger.critical
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--cgroup": cgroupRoot = arguments.popFirst() ?? cgroupRoot
    case "--seconds": seconds = arguments.popFirst().flatMap(Double.init) ?? seconds
    case "--critical-ms": critical.threshold = .milliseconds(arguments.popFirst().flatMap(Int.init) ?? 500)
    default:
        FileHandle.standardError.write(Data("usage: MemoryPressureDemo [--cgroup DIR] [--seconds N] [--critical-ms MS]\n".utf8))
        exit(2)
    }
}

/// One line on stdout at once (`print` buffers when stdout is a pipe).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let started = Date()
func stamp() -> String { String(format: "%6.2f s", Date().timeIntervalSince(started)) }
func pressure(_ path: String) -> String {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "unreadable").split(separator: "\n").joined(separator: " | ")
}

let memoryCache = MemoryCache<ImageKey, ImageContainer>(costLimit: 64 << 20)
func fill() {
    let bitmap = Bitmap(zeroed: PixelSize(width: 256, height: 256))
    for n in 0..<64 {
        let request = ImageRequest(url: URL(fileURLWithPath: "/demo/\(n).png"))
        let response = ImageResponse(bitmap: bitmap, source: .memory, originalSize: bitmap.size, format: .png)
        memoryCache.insert(response, for: ImageKey(request: request, cacheURL: request.url), cost: bitmap.cost)
    }
}
fill()

let done = DispatchSemaphore(value: 0)
let source = PSIMemoryPressureSource(cgroupRoot: cgroupRoot, triggers: [.warning, critical])
var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                memoryCache: memoryCache)
configuration.eventHandler = { event in
    guard case .memoryTrimmed(let level, let freed, let cancelled) = event else { return }
    say("\(stamp()) \(level): freed \(freed >> 20) MiB, \(cancelled) prefetches cancelled; cache now \(memoryCache.totalCost >> 20) MiB")
    for path in source.paths where FileManager.default.fileExists(atPath: path) { say("         \(path): \(pressure(path))") }
    if level == .critical { done.signal() } else { fill() }
}
let pipeline = ImagePipeline(configuration: configuration)

do {
    let watcher = try pipeline.watchMemoryPressure(source: source)
    say("\(stamp()) watching: \(watcher.mode); cache \(memoryCache.totalCost >> 20) MiB")
    let outcome = done.wait(timeout: .now() + seconds)
    say("\(stamp()) \(outcome == .success ? "critical trim seen" : "time is up"): stopping")
    watcher.stop()
    say("\(stamp()) stopped: thread running \(watcher.isRunning)")
} catch {
    say("memory pressure cannot be watched here: \(error)")
    exit(1)
}
