// Watches real memory pressure (Linux PSI) with a pipeline and prints every trim it causes:
// a demonstration of `ImagePipeline.watchMemoryPressure()`, driven by `memory-pressure.sh`.
//
//     MemoryPressureDemo [--cgroup DIR] [--seconds N]
//
// `--cgroup DIR` watches DIR/memory.pressure (a cgroup v2 directory) before
// /proc/pressure/memory. The memory cache holds 64 pictures of 256×256 (16 MiB) and is filled
// again after every trim, so each trim has something to free. Exits after a critical trim or
// after N seconds (default 60).
import Foundation
import PipelineCore

var cgroupRoot = "/sys/fs/cgroup"
var seconds = 60.0
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--cgroup": cgroupRoot = arguments.popFirst() ?? cgroupRoot
    case "--seconds": seconds = arguments.popFirst().flatMap(Double.init) ?? seconds
    default:
        FileHandle.standardError.write(Data("usage: MemoryPressureDemo [--cgroup DIR] [--seconds N]\n".utf8))
        exit(2)
    }
}

let started = Date()
func stamp() -> String { String(format: "%6.2f s", Date().timeIntervalSince(started)) }
func pressure(_ path: String) -> String {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "unreadable").split(separator: "\n").joined(separator: " | ")
}

let memoryCache = MemoryCache<ImageKey, ImageResponse>(costLimit: 64 << 20)
func fill() {
    let bitmap = Bitmap(zeroed: PixelSize(width: 256, height: 256))
    for n in 0..<64 {
        let request = ImageRequest(url: URL(fileURLWithPath: "/demo/\(n).png"))
        let response = ImageResponse(bitmap: bitmap, source: .memory, originalSize: bitmap.size, format: .png)
        memoryCache.insert(response, for: ImageKey(request: request, fetchURL: request.url), cost: bitmap.cost)
    }
}
fill()

let done = DispatchSemaphore(value: 0)
let source = PSIMemoryPressureSource(cgroupRoot: cgroupRoot)
var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                memoryCache: memoryCache)
configuration.eventHandler = { event in
    guard case .memoryTrimmed(let level, let freed, let cancelled) = event else { return }
    print("\(stamp()) \(level): freed \(freed >> 20) MiB, \(cancelled) prefetches cancelled; cache now \(memoryCache.totalCost >> 20) MiB")
    for path in source.paths where FileManager.default.fileExists(atPath: path) { print("         \(path): \(pressure(path))") }
    if level == .critical { done.signal() } else { fill() }
}
let pipeline = ImagePipeline(configuration: configuration)

do {
    let watcher = try pipeline.watchMemoryPressure(source: source)
    print("\(stamp()) watching: \(watcher.mode); cache \(memoryCache.totalCost >> 20) MiB")
    let outcome = done.wait(timeout: .now() + seconds)
    print("\(stamp()) \(outcome == .success ? "critical trim seen" : "time is up"): stopping")
    watcher.stop()
    print("\(stamp()) stopped: thread running \(watcher.isRunning)")
} catch {
    print("memory pressure cannot be watched here: \(error)")
    exit(1)
}
