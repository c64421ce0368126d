// Cost of each built-in processor on a 512×512 opaque photo-like bitmap, and of the three-pass
// box approximation of the same blur, in milliseconds (minimum of N runs). Run by
// Benchmarks/processors.sh, which times Pillow and vips on the same machine beside it.
import CodecJPEG
import CodecPNG
import Foundation
import LoaderFile
import PipelineCore

let runs = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 7
if CommandLine.arguments.count == 5, CommandLine.arguments[2] == "grid" {
    try await grid(photos: URL(fileURLWithPath: CommandLine.arguments[3]), cache: URL(fileURLWithPath: CommandLine.arguments[4]))
    exit(0)
}
let side = 512
var bytes = [UInt8](repeating: 255, count: side * side * 4)
for y in 0..<side {
    for x in 0..<side {
        let i = (y * side + x) * 4
        bytes[i] = UInt8((x * 37 + y * 11) & 255); bytes[i + 1] = UInt8((x ^ y) & 255); bytes[i + 2] = UInt8((x * y) >> 10 & 255)
    }
}
guard let input = Bitmap(width: side, height: side, bytesPerRow: side * 4, bytes: bytes) else { exit(1) }

func time(_ body: () throws -> Bitmap) rethrows -> Double {
    var best = Double.infinity
    for _ in 0..<runs {
        let start = DispatchTime.now().uptimeNanoseconds
        let out = try body()
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        if out.width == 0 { print("") }
        best = min(best, ms)
    }
    return best
}

print("| step (512×512) | ms |")
print("|---|---:|")
let steps: [(String, ImageProcessor)] = [
    ("circle", .circle), ("roundedCorners(radius: 32)", .roundedCorners(radius: 32)), ("grayscale", .grayscale),
    ("crop(256×256)", .crop(PixelRect(x: 128, y: 128, width: 256, height: 256))),
    ("gaussianBlur(radius: 2)", .gaussianBlur(radius: 2)), ("gaussianBlur(radius: 8)", .gaussianBlur(radius: 8)),
    ("gaussianBlur(radius: 20)", .gaussianBlur(radius: 20)),
]
for (name, step) in steps {
    print("| \(name) | \(String(format: "%.2f", try time { try step.process(input) })) |")
}
for sigma in [2.0, 8.0, 20.0] {
    print("| three-pass box, sigma \(Int(sigma)) | \(String(format: "%.2f", time { BoxBlurApproximation.blur(input, sigma: sigma) })) |")
}

/// Second launch of a grid: every JPEG in `photos` as a 256×256 round thumbnail, by a new
/// pipeline on a warm disk cache in `cache`, answered from renditions or from the originals.
func grid(photos: URL, cache: URL) async throws {
    let files = try FileManager.default.contentsOfDirectory(at: photos, includingPropertiesForKeys: nil)
        .filter { $0.pathExtension == "jpg" }.sorted { $0.path < $1.path }
    let requests = files.map { ImageRequest(url: $0, width: 256, height: 256, contentMode: .fill, processors: [.circle]) }
    let renditionBytes = Counter()
    func pipeline(_ policy: DiskCachePolicy) throws -> ImagePipeline {
        var configuration = ImagePipeline.Configuration(
            decoders: DecoderRegistry([JPEGDecoder(), PNGDecoder()]), loaders: LoaderRegistry([FileDataLoader()]),
            diskCache: try DiskCache(directory: cache, sizeLimit: 1 << 30))
        configuration.diskCachedSchemes = ["file"]
        configuration.diskCachePolicy = policy
        configuration.renditionEncoder = PNGEncoder()
        configuration.eventHandler = { if case .renditionStored(_, let bytes) = $0 { renditionBytes.add(bytes) } }
        return ImagePipeline(configuration: configuration)
    }
    func load(_ pipeline: ImagePipeline) async throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try await withThrowingTaskGroup(of: Void.self) { group in
            for request in requests { group.addTask { _ = try await pipeline.image(for: request) } }
            try await group.waitForAll()
        }
        await pipeline.waitForBackgroundWork()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
    }
    _ = try await load(try pipeline(.originalsAndRenditions))  // first launch: originals and renditions stored
    var fromRenditions = Double.infinity, fromOriginals = Double.infinity
    for _ in 0..<runs {
        fromRenditions = min(fromRenditions, try await load(try pipeline(.originalsAndRenditions)))
        fromOriginals = min(fromOriginals, try await load(try pipeline(.originals)))
    }
    let originalBytes = files.reduce(0) { $0 + ((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
    print("| second launch, \(files.count) photos → 256×256 round | ms |")
    print("|---|---:|")
    print("| from renditions on disk (\(renditionBytes.value / 1024) KiB of PNG) | \(String(format: "%.0f", fromRenditions)) |")
    print("| from originals on disk (\(originalBytes / 1024) KiB of JPEG) | \(String(format: "%.0f", fromOriginals)) |")
}

/// A thread-safe sum.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func add(_ n: Int) { lock.lock(); total += n; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return total }
}
