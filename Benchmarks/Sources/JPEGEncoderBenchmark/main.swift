// Writes, for each photo given, our 256-px thumbnail (JPEGDecoder with DCT scaling + the
// pipeline's resampler) as a lossless PNG (the pixels every encoder is given) and as our
// JPEG at quality Q (default 80), and prints the JPEG encode time (minimum of N runs).
// Run by Benchmarks/encoders-jpeg.sh, which encodes the same PNGs with vips and scores both.
//
// Usage: JPEGEncoderBenchmark OUT_DIR QUALITY RUNS PHOTO...
import CodecJPEG
import CodecPNG
import Foundation
import PipelineCore

let arguments = CommandLine.arguments
guard arguments.count >= 5, let quality = Int(arguments[2]), let runs = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: JPEGEncoderBenchmark OUT_DIR QUALITY RUNS PHOTO...\n".utf8))
    exit(2)
}
let out = URL(fileURLWithPath: arguments[1])
try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
let box = PixelSize(width: 256, height: 256)
print("photo\tthumbnail\tour_jpeg_bytes\tour_encode_ms")
for (index, path) in arguments.dropFirst(4).enumerated() {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let decoder = JPEGDecoder()
    let info = try decoder.readInfo(data)
    let plan = ResizePlan(source: info.uprightSize, target: .pixels(box), contentMode: .fit)
    let decoded = try decoder.decode(data, options: DecodeOptions(targetSize: plan.scaledSize))
    let thumbnail = Resampler.resample(decoded.bitmap, plan: plan)
    let stem = String(format: "%02d", index)
    try PNGEncoder().encode(thumbnail).write(to: out.appendingPathComponent("\(stem).png"))
    var best = Double.infinity
    var jpeg = Data()
    for _ in 0..<max(1, runs) {
        let start = DispatchTime.now().uptimeNanoseconds
        jpeg = try JPEGEncoder().encode(thumbnail, options: EncodeOptions(quality: quality))
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    try jpeg.write(to: out.appendingPathComponent("\(stem).ours.jpg"))
    print("\(path)\t\(thumbnail.width)x\(thumbnail.height)\t\(jpeg.count)\t\(String(format: "%.3f", best))")
}
