// A screen of pictures requested at once: how long until the first one arrives and until all
// have, plain and with processors (issue 23). A processed picture should follow its own decode,
// not wait for every decode queued beside it. Run by Benchmarks/first-picture.sh.
//
//   FirstPictureBenchmark RUNS FOLDER [COUNT]
//
// COUNT (default 30) JPEGs of FOLDER are requested at once as 320×320 fills from `file` URLs, by
// a new pipeline each run (no disk cache, an empty memory cache), with no processor, `.circle`
// and `.gaussianBlur(radius: 2)`; the variants take turns run by run. Medians of RUNS.
import CodecJPEG
import Foundation
import LoaderFile
import PipelineCore

let arguments = CommandLine.arguments
guard arguments.count >= 3, let runs = Int(arguments[1]) else {
    print("usage: FirstPictureBenchmark RUNS FOLDER [COUNT]")
    exit(2)
}
let count = arguments.count > 3 ? Int(arguments[3]) ?? 30 : 30
let folder = URL(fileURLWithPath: arguments[2])
let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
    .filter { $0.pathExtension.lowercased() == "jpg" }
    .sorted { $0.lastPathComponent < $1.lastPathComponent }
    .prefix(count)
guard files.count == count else {
    print("FirstPictureBenchmark: \(folder.path) has fewer than \(count) JPEGs")
    exit(1)
}

/// Milliseconds from the start until the first response and until the last.
func screen(_ processors: [ImageProcessor]) async throws -> (first: Double, all: Double) {
    let configuration = ImagePipeline.Configuration(decoders: DecoderRegistry().registering(JPEGDecoder()),
                                                    loaders: LoaderRegistry().registering(FileDataLoader()))
    let pipeline = ImagePipeline(configuration: configuration)
    let start = DispatchTime.now().uptimeNanoseconds
    func elapsed() -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        for file in files {
            let request = ImageRequest(url: file, width: 320, height: 320, contentMode: .fill, processors: processors)
            group.addTask { _ = try await pipeline.image(for: request) }
        }
        try await group.next()
        let first = elapsed()
        try await group.waitForAll()
        return (first, elapsed())
    }
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

let variants: [(String, [ImageProcessor])] = [
    ("no processor", []), (".circle", [.circle]), (".gaussianBlur(radius: 2)", [.gaussianBlur(radius: 2)]),
]
var firsts = Array(repeating: [Double](), count: variants.count)
var totals = firsts
_ = try await screen([])  // warm the page cache and the code
for _ in 0..<runs {
    for (index, variant) in variants.enumerated() {
        let (first, all) = try await screen(variant.1)
        firsts[index].append(first)
        totals[index].append(all)
    }
}
let cores = ProcessInfo.processInfo.activeProcessorCount
print("| \(count) pictures at once, 320×320 fill, \(cores) decode threads | first (ms) | all \(count) (ms) | first ÷ plain first |")
print("|---|---:|---:|---:|")
let plainFirst = median(firsts[0])
for (index, variant) in variants.enumerated() {
    print(String(format: "| %@ | %.0f | %.0f | %.2f× |", variant.0, median(firsts[index]), median(totals[index]),
                 median(firsts[index]) / plainFirst))
}
