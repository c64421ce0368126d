// A rotated thumbnail beside a plain one, and BlurHash beside ThumbHash (issue 40). Run by
// Benchmarks/orientation.sh, which prints the peers' rows (vipsthumbnail + vips rot, the PyPI
// BlurHash reference) in the same run.
//
//   OrientationBenchmark RUNS FILE...          thumbnails: each FILE fit in 256 × 256 through a
//                                              new pipeline (JPEG decoder, no caches), plain and
//                                              turned (ProcessingOptions.transform), min of RUNS
//   OrientationBenchmark RUNS --hashes FILE    BlurHash (4 × 3) and ThumbHash of FILE's 100-pixel
//                                              decode, min of RUNS (of 100 encodes each)
import CodecJPEG
import Foundation
import LoaderFile
import PipelineCore

let arguments = CommandLine.arguments
guard arguments.count >= 3, let runs = Int(arguments[1]) else {
    print("usage: OrientationBenchmark RUNS FILE... | RUNS --hashes FILE")
    exit(2)
}

func milliseconds(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

/// `file` fit in 256 × 256, turned by `transform`, through a new pipeline (an empty memory cache, no disk cache).
func thumbnail(_ file: URL, _ transform: ImageOrientation) async throws -> Bitmap {
    let configuration = ImagePipeline.Configuration(decoders: DecoderRegistry().registering(JPEGDecoder()),
                                                    loaders: LoaderRegistry().registering(FileDataLoader()))
    let pipeline = ImagePipeline(configuration: configuration)
    var request = ImageRequest(url: file, width: 256, height: 256)
    request.processing.transform = transform
    return try await pipeline.image(for: request).bitmap
}

/// The smallest of `runs` timings of `body`.
func best(_ body: () async throws -> Void) async rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<runs { times.append(try await milliseconds(body)) }
    return times.min() ?? 0
}

if arguments[2] == "--hashes", arguments.count > 3 {
    let file = URL(fileURLWithPath: arguments[3])
    var request = ImageRequest(url: file, width: 100, height: 100)
    request.processing.pixelFormat = .rgba8Straight
    let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry().registering(JPEGDecoder()),
                                                      loaders: LoaderRegistry().registering(FileDataLoader())))
    let small = try await pipeline.image(for: request).bitmap
    var sink = 0
    let blur = await best { for _ in 0..<100 { sink &+= BlurHash(bitmap: small).string.utf8.count } } / 100
    let thumb = await best { for _ in 0..<100 { sink &+= ThumbHash(bitmap: small).bytes.count } } / 100
    print("| \(file.lastPathComponent) (\(small.width)×\(small.height) decode) | ours: BlurHash 4×3 | \(String(format: "%.3f", blur)) |")
    print("| \(file.lastPathComponent) (\(small.width)×\(small.height) decode) | ours: ThumbHash | \(String(format: "%.3f", thumb)) |")
    if sink == 42 { print("") }
    // The pixels for the Python reference, so it hashes the same ones.
    let rgba = small.unpremultipliedBytes()
    var ppm = Data("P6\n\(small.width) \(small.height)\n255\n".utf8)
    for p in 0..<small.width * small.height { ppm.append(contentsOf: rgba[p * 4..<p * 4 + 3]) }
    try ppm.write(to: URL(fileURLWithPath: arguments.count > 4 ? arguments[4] : "/tmp/orientation-benchmark.ppm"))
    exit(0)
}

let turns: [(String, ImageOrientation)] = [("plain", .up), ("--rotate 90", .right), ("--rotate 180", .down),
                                           ("--rotate 90 --flop", .leftMirrored)]
for path in arguments.dropFirst(2) {
    let file = URL(fileURLWithPath: path)
    _ = try await thumbnail(file, .up)  // warm the page cache and the code
    for (name, transform) in turns {
        var size = PixelSize(width: 0, height: 0)
        let time = try await best { size = try await thumbnail(file, transform).size }
        print("| \(file.lastPathComponent) | ours, \(name) (\(size.width)×\(size.height)) | \(String(format: "%.2f", time)) |")
    }
}
