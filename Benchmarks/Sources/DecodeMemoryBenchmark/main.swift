// Decode admission by memory, measured (issue 15):
//
//   DecodeMemoryBenchmark estimate FILE [SIZE]
//       one decode through a pipeline (full size, or a SIZE-pixel thumbnail): the decoder's
//       estimate as the pipeline admitted it, beside the process's measured peak RSS growth.
//   DecodeMemoryBenchmark concurrent FILE COUNT SIZE THREADS BUDGET_MIB|none
//       COUNT thumbnails of FILE (distinct URLs, same bytes) at once on THREADS decode
//       threads, with or without a decode memory budget: peak RSS and wall time.
//
// The file's bytes are read before measuring and served from memory, so the numbers are the
// decode's alone. glibc's mmap threshold is fixed at 128 KiB so that every large buffer is
// mapped on allocation and unmapped on free: the peak RSS then sees each one.
import CodecGIF
import CodecHEIF
import CodecJPEG
import CodecPNG
import CodecWebP
import Foundation
import PipelineCore

import CMallocTuning

struct MemoryLoader: DataLoading {
    let data: Data
    var schemes: Set<String> { ["mem"] }
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult { .data(data, ResponseMetadata()) }
}

func status(_ field: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        return (Int(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "") ?? 0) * 1024
    }
    return 0
}

func resetPeak() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }

func pipeline(for data: Data, threads: Int, budget: Int?) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(
        decoders: DecoderRegistry([JPEGDecoder(), PNGDecoder(), WebPDecoder(), HEIFDecoder(), GIFDecoder()]),
        loaders: LoaderRegistry([MemoryLoader(data: data)]),
        memoryCache: MemoryCache(costLimit: 1), maxConcurrentDecodes: threads, negativeCacheLifetime: 0)
    configuration.decodeMemoryBudget = budget
    return ImagePipeline(configuration: configuration)
}

func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }

let arguments = CommandLine.arguments
guard arguments.count >= 3, let data = FileManager.default.contents(atPath: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: DecodeMemoryBenchmark estimate FILE [SIZE] | concurrent FILE COUNT SIZE THREADS BUDGET_MIB|none\n".utf8))
    exit(2)
}
_ = malloc_tuning_fix_mmap_threshold(128 * 1024)
let name = URL(fileURLWithPath: arguments[2]).lastPathComponent

switch arguments[1] {
case "estimate":
    let size = arguments.count > 3 ? Int(arguments[3]) : nil
    let target: TargetSize = size.map { .pixels(PixelSize(width: $0, height: $0)) } ?? .original
    let pipe = pipeline(for: data, threads: 1, budget: 1 << 40)
    // Warm up the codec (libraries' one-time tables, plugin loading) on another URL first.
    _ = try await pipe.image(for: ImageRequest(url: URL(fileURLWithPath: "/warm-up").withScheme("mem"), targetSize: target))
    let before = status("VmRSS")
    resetPeak()
    let response = try await pipe.image(for: ImageRequest(url: URL(fileURLWithPath: "/measured").withScheme("mem"), targetSize: target))
    let peak = status("VmHWM") - before
    let estimate = pipe.decodeMemory.peakBytesInUse
    let ratio = String(format: "%.2f", Double(estimate) / Double(max(1, peak)))
    print("\(name)\t\(size.map(String.init) ?? "full")\t\(response.bitmap.width)x\(response.bitmap.height)"
          + "\testimate \(mib(estimate)) MiB\tmeasured \(mib(peak)) MiB\tratio \(ratio)")
case "concurrent":
    guard arguments.count == 7, let count = Int(arguments[3]), let size = Int(arguments[4]), let threads = Int(arguments[5]) else { exit(2) }
    let budget = Int(arguments[6]).map { $0 << 20 }
    let pipe = pipeline(for: data, threads: threads, budget: budget)
    let start = Date()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            let url = URL(fileURLWithPath: "/\(index)").withScheme("mem")
            group.addTask { _ = try await pipe.image(for: ImageRequest(url: url, width: size, height: size)) }
        }
        try await group.waitForAll()
    }
    let seconds = Date().timeIntervalSince(start)
    print("\(name)\t\(count) at once\t\(threads) threads\tbudget \(budget.map { mib($0) + " MiB" } ?? "none")"
          + "\tpeak RSS \(mib(status("VmHWM"))) MiB\tadmitted peak \(mib(pipe.decodeMemory.peakBytesInUse)) MiB\t\(String(format: "%.2f", seconds)) s")
default:
    exit(2)
}

extension URL {
    func withScheme(_ scheme: String) -> URL {
        var components = URLComponents(url: self, resolvingAgainstBaseURL: false)
        components?.scheme = scheme
        return components?.url ?? self
    }
}
