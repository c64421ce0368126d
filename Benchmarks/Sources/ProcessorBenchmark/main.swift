// Cost of each built-in processor on a 512×512 opaque photo-like bitmap, and of the Gaussian blur
// at radii on both sides of its switch from the exact kernel to the three-pass box approximation,
// in milliseconds (minimum of N runs). Run by
// Benchmarks/processors.sh, which times Pillow and vips on the same machine beside it.
// `SIDE=2048` times a 2048×2048 bitmap instead; `SIGMAS="3 12 20"` picks the blur's radii.
// `PHOTO=file.raw` (512×512 RGBA, as `vips rawsave` writes it) adds the sharpen rows on a photo.
import CacheDisk
import CodecJPEG
import CodecPNG
import CodecWebP
import Foundation
import LoaderFile
import PipelineCore

let runs = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 7
if CommandLine.arguments.count == 5, CommandLine.arguments[2] == "alpha" {
    try await alphaFormats(photos: URL(fileURLWithPath: CommandLine.arguments[3]), cache: URL(fileURLWithPath: CommandLine.arguments[4]))
    exit(0)
}
if CommandLine.arguments.count == 5, CommandLine.arguments[2] == "grid" {
    try await grid(photos: URL(fileURLWithPath: CommandLine.arguments[3]), cache: URL(fileURLWithPath: CommandLine.arguments[4]))
    exit(0)
}
let side = Int(ProcessInfo.processInfo.environment["SIDE"] ?? "") ?? 512
var bytes = [UInt8](repeating: 255, count: side * side * 4)
for y in 0..<side {
    for x in 0..<side {
        let i = (y * side + x) * 4
        bytes[i] = UInt8((x * 37 + y * 11) & 255); bytes[i + 1] = UInt8((x ^ y) & 255); bytes[i + 2] = UInt8((x * y) >> 10 & 255)
    }
}
guard let input = Bitmap(width: side, height: side, bytesPerRow: side * 4, bytes: bytes) else { exit(1) }
if CommandLine.arguments.count == 3, CommandLine.arguments[2] == "adjust" {
    try colorAdjustments(input)
    exit(0)
}

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

print("| step (\(side)×\(side)) | ms |")
print("|---|---:|")
let steps: [(String, ImageProcessor)] = [
    ("circle", .circle), ("roundedCorners(radius: 32)", .roundedCorners(radius: 32)), ("grayscale", .grayscale),
    ("crop(256×256)", .crop(PixelRect(x: 128, y: 128, width: 256, height: 256))),
]
for (name, step) in steps {
    print("| \(name) | \(String(format: "%.2f", try time { try step.process(input) })) |")
}
// The blur at each radius as `.gaussianBlur(radius:)` runs it: the exact kernel up to a standard
// deviation of 12, the three-pass box approximation above (the library's threshold,
// `GaussianBlurProcessor.exactLimit`, internal: both paths are timed through the public processor).
// 12 and 12.5 time the two paths either side of the switch.
let exactLimit = 12.0
print("\n| sigma | path | gaussianBlur(radius:) ms |")
print("|---:|---|---:|")
for sigma in (ProcessInfo.processInfo.environment["SIGMAS"] ?? "1 2 3 5 8 12 12.5 20").split(separator: " ").compactMap({ Double($0) }) {
    let ms = try time { try ImageProcessor.gaussianBlur(radius: sigma).process(input) }
    let path = sigma > exactLimit ? "three-pass box" : "exact kernel"
    print("| \(String(format: "%g", sigma)) | \(path) | \(String(format: "%.2f", ms)) |")
}

// Sharpening (libvips's `vips_sharpen`, default slopes) at three sigmas, on the synthetic picture
// (nearly every pixel an edge: every pixel takes the Lab round trip) and on a photo.
var sharpenInputs = [("synthetic \(side)×\(side)", input)]
if let path = ProcessInfo.processInfo.environment["PHOTO"], let raw = FileManager.default.contents(atPath: path),
   let photo = Bitmap(width: 512, height: raw.count / 2048, bytesPerRow: 2048, pixelFormat: .rgba8Straight, bytes: [UInt8](raw)) {
    sharpenInputs.append(("photo 512×\(photo.height)", photo))
}
print("\n| input | sharpen(sigma:) | ms |")
print("|---|---:|---:|")
for (name, picture) in sharpenInputs {
    for sigma in [0.5, 1, 2.5] {
        let ms = try time { try ImageProcessor.sharpen(sigma: sigma).process(picture) }
        print("| \(name) | \(sigma) | \(String(format: "%.2f", ms)) |")
    }
}

/// Second launch of a grid: every JPEG in `photos` as a 256×256 thumbnail with a processor, by
/// a new pipeline on a warm disk cache in `cache`, answered from renditions (`RenditionEncoder`:
/// JPEG q85 when opaque, WebP q85 with exact alpha otherwise) or from the originals. "Fresh" originals come from
/// `FreshFileLoader` (as an HTTP answer with `max-age` would); plain `file` answers carry no
/// lifetime, so each hit on a stale original also revalidates it in the background (a reload:
/// `FileDataLoader` has no 304), which is timed until ``ImagePipeline/waitForBackgroundWork()``.
func grid(photos: URL, cache: URL) async throws {
    let files = try FileManager.default.contentsOfDirectory(at: photos, includingPropertiesForKeys: nil)
        .filter { $0.pathExtension == "jpg" }.sorted { $0.path < $1.path }
    let originalBytes = files.reduce(0) { $0 + ((try? $1.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) }
    let encoders = EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder()).registering(WebPEncoder())
    print("| second launch, \(files.count) photos → 256×256 | renditions on disk | from renditions ms | from originals ms (\(originalBytes / 1024) KiB of JPEG) | speed-up |")
    print("|---|---|---:|---:|---:|")
    let cases: [(String, ImageProcessor, Bool)] = [
        (".circle, fresh originals", .circle, true), (".grayscale, fresh originals", .grayscale, true),
        (".gaussianBlur(radius: 2), fresh originals", .gaussianBlur(radius: 2), true),
        (".grayscale, stale originals (file URLs: background reloads)", .grayscale, false),
    ]
    for (name, processor, fresh) in cases {
        let caseCache = cache.appendingPathComponent(fresh ? "fresh" : "stale")
        let requests = files.map { ImageRequest(url: $0, width: 256, height: 256, contentMode: .fill, processors: [processor]) }
        let renditionBytes = Counter()
        func pipeline(_ policy: DiskCachePolicy) throws -> ImagePipeline {
            let loader: any DataLoading = fresh ? FreshFileLoader() : FileDataLoader()
            var configuration = ImagePipeline.Configuration(
                decoders: DecoderRegistry([JPEGDecoder(), PNGDecoder(), WebPDecoder()]), loaders: LoaderRegistry([loader]),
                diskCache: try DiskCache(directory: caseCache, sizeLimit: 1 << 30))
            configuration.diskCachedSchemes = ["file"]
            configuration.diskCachePolicy = policy
            configuration.renditionEncoder = RenditionEncoder(encoders: encoders)
            configuration.eventHandler = { if case .renditionStored(_, let bytes) = $0 { renditionBytes.add(bytes) } }
            return ImagePipeline(configuration: configuration)
        }
        func load(_ pipeline: ImagePipeline) async throws -> Double { try await loadAll(requests, with: pipeline) }
        _ = try await load(try pipeline(.originalsAndRenditions))  // first launch: originals and renditions stored
        let sample = try await pipeline(.originals).image(for: requests[0]).bitmap
        let format = RenditionEncoder(encoders: encoders).choice(for: sample).format.rawValue.uppercased()
        var fromRenditions = Double.infinity, fromOriginals = Double.infinity
        for _ in 0..<runs {
            fromRenditions = min(fromRenditions, try await load(try pipeline(.originalsAndRenditions)))
            fromOriginals = min(fromOriginals, try await load(try pipeline(.originals)))
        }
        print("| \(name) | \(renditionBytes.value / 1024) KiB of \(format) | \(String(format: "%.0f", fromRenditions)) | "
              + "\(String(format: "%.0f", fromOriginals)) | \(String(format: "%.1f", fromOriginals / fromRenditions))× |")
    }
    try await breakdown(files: files, cache: cache.appendingPathComponent("fresh"))
}

/// `FileDataLoader` answering as an HTTP server with `Cache-Control: max-age=3600` would
/// (a `file` answer carries no lifetime, so the disk cache would see every original as stale).
struct FreshFileLoader: DataLoading {
    let files = FileDataLoader()
    var schemes: Set<String> { files.schemes }
    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        switch try await files.load(request) {
        case .data(let data, var metadata):
            metadata.freshFor = 3600
            return .data(data, metadata)
        case .notModified(var metadata):
            metadata.freshFor = 3600
            return .notModified(metadata)
        }
    }
}

/// Where a second launch from renditions spends its time, step by step, one thread, no
/// pipeline: opening the cache (and its background index scan), the originals' digests (the
/// tag check: headers only), reading the JPEG renditions' files and decoding them.
func breakdown(files: [URL], cache: URL) async throws {
    func ms(_ start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6 }
    var best = [Double](repeating: .infinity, count: 6)
    for _ in 0..<runs {
        var start = DispatchTime.now().uptimeNanoseconds
        let disk = try DiskCache(directory: cache, sizeLimit: 1 << 30)
        await disk.waitForMaintenance()
        best[0] = min(best[0], ms(start))
        start = DispatchTime.now().uptimeNanoseconds
        for file in files { _ = await disk.cachedDigest(for: file) }
        best[1] = min(best[1], ms(start))
        // The JPEG renditions' entry files (small; the originals are over 100 KB): read whole,
        // then the JPEG inside decoded at full size, as a rendition hit does.
        let names = try FileManager.default.contentsOfDirectory(atPath: cache.path)
        var bodies: [Data] = [], pngs: [Data] = [], webps: [Data] = []
        start = DispatchTime.now().uptimeNanoseconds
        for name in names {
            let data = try Data(contentsOf: cache.appendingPathComponent(name))
            // The first signature in the file names the rendition's format (a WebP or PNG body may
            // contain JPEG's three bytes by chance).
            let signatures = [(0, Data([0xFF, 0xD8, 0xFF])), (1, Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A])), (2, Data("WEBPVP8".utf8))]
            let found = signatures.compactMap { kind, signature in data.range(of: signature).map { (kind, $0.lowerBound) } }
            guard data.count < 1_000_000, let (kind, at) = found.min(by: { $0.1 < $1.1 }) else { continue }
            switch kind {
            case 0 where data.count < 40_000: bodies.append(data[at...])
            case 1: pngs.append(data[at...])
            case 2 where at >= 8: webps.append(data[(at - 8)...])
            default: break
            }
        }
        best[2] = min(best[2], ms(start))
        start = DispatchTime.now().uptimeNanoseconds
        for body in bodies { _ = try JPEGDecoder().decode(Data(body), options: DecodeOptions()) }
        best[3] = min(best[3], ms(start) * 100 / Double(max(1, bodies.count)))  // per 100
        start = DispatchTime.now().uptimeNanoseconds
        for body in pngs { _ = try PNGDecoder().decode(Data(body), options: DecodeOptions()) }
        best[4] = min(best[4], ms(start) * 100 / Double(max(1, pngs.count)))
        start = DispatchTime.now().uptimeNanoseconds
        for body in webps { _ = try WebPDecoder().decode(Data(body), options: DecodeOptions()) }
        best[5] = min(best[5], ms(start) * 100 / Double(max(1, webps.count)))
    }
    print("")
    print("| one thread, no pipeline (per 100 pictures) | ms |")
    print("|---|---:|")
    print("| open the cache + its index scan (\((try? FileManager.default.contentsOfDirectory(atPath: cache.path).count) ?? 0) files) | \(String(format: "%.1f", best[0])) |")
    print("| 100 originals' digests (header reads: the tag check) | \(String(format: "%.1f", best[1])) |")
    print("| read every small entry file (renditions) | \(String(format: "%.1f", best[2])) |")
    print("| decode 100 JPEG renditions (256×256) | \(String(format: "%.1f", best[3])) |")
    print("| decode 100 PNG renditions (256×256 RGBA) | \(String(format: "%.1f", best[4])) |")
    print("| decode 100 WebP renditions (256×256, q85, exact alpha) | \(String(format: "%.1f", best[5])) |")
}

/// Second launch of the `.circle` grid (renditions with alpha) from renditions written in each
/// candidate format for results with alpha, beside the same launch from the originals (fresh
/// originals, as in `grid(photos:cache:)`): which format answers fastest, and its bytes.
func alphaFormats(photos: URL, cache: URL) async throws {
    let files = try FileManager.default.contentsOfDirectory(at: photos, includingPropertiesForKeys: nil)
        .filter { $0.pathExtension == "jpg" }.sorted { $0.path < $1.path }
    let encoders = EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder()).registering(WebPEncoder())
    let requests = files.map { ImageRequest(url: $0, width: 256, height: 256, contentMode: .fill, processors: [.circle]) }
    let candidates: [(String, ImageFormat, EncodeOptions)] = [
        ("PNG, zlib 1, filters chosen per row (the default)", .png, EncodeOptions(lossless: true, compressionLevel: 1)),
        ("PNG, zlib 1, no filtering", .png, EncodeOptions(lossless: true, compressionLevel: 1, effort: 0)),
        ("WebP lossless (method 4)", .webp, EncodeOptions(lossless: true)),
        ("WebP lossless (method 0)", .webp, EncodeOptions(lossless: true, effort: 0)),
        ("WebP lossy q85, lossless alpha", .webp, EncodeOptions(quality: 85)),
    ]
    print("| second launch, \(files.count) photos → 256×256 .circle | renditions on disk | encode ms (first launch, whole grid) | from renditions ms | from originals ms | speed-up |")
    print("|---|---:|---:|---:|---:|---:|")
    for (index, (name, format, options)) in candidates.enumerated() {
        let caseCache = cache.appendingPathComponent("alpha-\(index)")
        let bytes = Counter()
        func pipeline(_ policy: DiskCachePolicy) throws -> ImagePipeline {
            var configuration = ImagePipeline.Configuration(
                decoders: DecoderRegistry([JPEGDecoder(), PNGDecoder(), WebPDecoder()]), loaders: LoaderRegistry([FreshFileLoader()]),
                diskCache: try DiskCache(directory: caseCache, sizeLimit: 1 << 30))
            configuration.diskCachedSchemes = ["file"]
            configuration.diskCachePolicy = policy
            var encoder = RenditionEncoder(encoders: encoders, transparentFormat: format)
            encoder.transparentOptions = options
            configuration.renditionEncoder = encoder
            configuration.eventHandler = { if case .renditionStored(_, let n) = $0 { bytes.add(n) } }
            return ImagePipeline(configuration: configuration)
        }
        func load(_ pipeline: ImagePipeline) async throws -> Double { try await loadAll(requests, with: pipeline) }
        // The encode cost alone: the processed results in memory, each encoded once more here.
        let first = try pipeline(.originalsAndRenditions)
        _ = try await load(first)
        var encoder = RenditionEncoder(encoders: encoders, transparentFormat: format)
        encoder.transparentOptions = options
        var encodeMs = Double.infinity
        let bitmaps = requests.compactMap { first.cachedImage(for: $0)?.bitmap }
        for _ in 0..<runs {
            let start = DispatchTime.now().uptimeNanoseconds
            for bitmap in bitmaps { _ = try encoder.encode(bitmap) }
            encodeMs = min(encodeMs, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        var fromRenditions = Double.infinity, fromOriginals = Double.infinity
        for _ in 0..<runs {
            fromRenditions = min(fromRenditions, try await load(try pipeline(.originalsAndRenditions)))
            fromOriginals = min(fromOriginals, try await load(try pipeline(.originals)))
        }
        print("| \(name) | \(bytes.value / 1024) KiB | \(String(format: "%.0f", encodeMs)) | \(String(format: "%.0f", fromRenditions)) | "
              + "\(String(format: "%.0f", fromOriginals)) | \(String(format: "%.1f", fromOriginals / fromRenditions))× |")
    }
}

/// A thread-safe sum.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    func add(_ n: Int) { lock.lock(); total += n; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return total }
}

/// Milliseconds to answer every request at once with `pipeline`, its background work included.
func loadAll(_ requests: [ImageRequest], with pipeline: ImagePipeline) async throws -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await withThrowingTaskGroup(of: Void.self) { group in
        for request in requests { group.addTask { _ = try await pipeline.image(for: request) } }
        try await group.waitForAll()
    }
    await pipeline.waitForBackgroundWork()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}
