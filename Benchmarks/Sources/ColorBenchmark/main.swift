// The cost of colour management: a JPEG decoded with and without conversion to sRGB, and the
// transform alone on the decoded bitmap. Minimum of RUNS runs each.
//
// Usage: ColorBenchmark RUNS FILE:TARGET... (TARGET is the longer side of the thumbnail, or 0
// for a full decode). The files must embed an RGB ICC profile.
//        ColorBenchmark psnr CORPUS_ICC_DIR: each file of references.json against its sRGB
//        reference, converted and as stored.
import CodecHEIF
import CodecJPEG
import CodecPNG
import CodecWebP
import ColorManagement
import Foundation
import PipelineCore

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func milliseconds(_ value: Double) -> String { String(format: "%.1f ms", value * 1000) }

let arguments = CommandLine.arguments.dropFirst()

/// PSNR in dB over R, G and B of two straight RGBA buffers.
func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
    var sum = 0.0
    for i in stride(from: 0, to: min(a.count, b.count), by: 4) {
        for c in 0..<3 { let d = Double(Int(a[i + c]) - Int(b[i + c])); sum += d * d }
    }
    let mse = sum / Double(max(1, a.count / 4 * 3))
    return mse == 0 ? 99 : 10 * log10(255 * 255 / mse)
}

if arguments.first == "psnr", arguments.count == 2 {
    let folder = URL(fileURLWithPath: arguments[arguments.startIndex + 1])
    let map = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: folder.appendingPathComponent("references.json")))
    print("| file | PSNR converted | PSNR as stored |")
    print("| --- | --- | --- |")
    for (file, reference) in map.sorted(by: { $0.key < $1.key }) {
        let decoders: [String: any ImageDecoding] = ["jpg": JPEGDecoder(), "png": PNGDecoder(), "webp": WebPDecoder()]
        let decoder = decoders[(file as NSString).pathExtension] ?? HEIFDecoder()
        let data = try Data(contentsOf: folder.appendingPathComponent(file))
        let expected = try PNGDecoder().decode(try Data(contentsOf: folder.appendingPathComponent(reference)),
                                               options: DecodeOptions(convertsToSRGB: false)).bitmap.unpremultipliedBytes()
        let converted = try decoder.decode(data, options: DecodeOptions()).bitmap.unpremultipliedBytes()
        let stored = try decoder.decode(data, options: DecodeOptions(convertsToSRGB: false)).bitmap.unpremultipliedBytes()
        print("| \(file) | " + String(format: "%.1f dB | %.1f dB |", psnr(converted, expected), psnr(stored, expected)))
    }
    exit(0)
}
guard let runs = arguments.first.flatMap({ Int($0) }), arguments.count > 1 else {
    print("usage: ColorBenchmark RUNS FILE:TARGET...")
    exit(2)
}
print("| input | output | decode, stored values | decode, converted to sRGB | transform alone | transform / decode |")
print("| --- | --- | --- | --- | --- | --- |")
for argument in arguments.dropFirst() {
    let parts = argument.split(separator: ":")
    guard parts.count == 2, let target = Int(parts[1]) else { print("bad argument \(argument)"); exit(2) }
    let url = URL(fileURLWithPath: String(parts[0]))
    let data = try Data(contentsOf: url)
    let decoder = JPEGDecoder()
    let info = try decoder.readInfo(data)
    let size: PixelSize? = target == 0 ? nil : {
        let scale = Double(target) / Double(max(info.size.width, info.size.height))
        return PixelSize(width: max(1, Int((Double(info.size.width) * scale).rounded())),
                         height: max(1, Int((Double(info.size.height) * scale).rounded())))
    }()
    let stored = DecodeOptions(targetSize: size, convertsToSRGB: false)
    let converted = DecodeOptions(targetSize: size)
    var plain = Double.infinity, managed = Double.infinity, transform = Double.infinity
    var output = try decoder.decode(data, options: stored).bitmap
    guard let profileInfo = info.colorProfile, profileInfo.problem == nil else { print("\(url.lastPathComponent): no usable profile"); exit(1) }
    for _ in 0..<runs {
        plain = min(plain, try seconds { output = try decoder.decode(data, options: stored).bitmap })
        managed = min(managed, try seconds { _ = try decoder.decode(data, options: converted) })
    }
    // The transform alone, on the decoded bitmap (the profile is cached by now).
    let icc = try Data(contentsOf: url.appendingPathExtension("icc"))
    let profile = ColorManagement.profile(iccData: icc)
    for _ in 0..<runs {
        var copy = output
        copy.withUnsafeMutableBytes { _ in }  // make the copy unique before timing
        transform = min(transform, seconds { profile.convertToSRGB(&copy, hasAlpha: false) })
    }
    print("| \(url.lastPathComponent) \(info.size.width)×\(info.size.height) | \(output.width)×\(output.height) | "
          + "\(milliseconds(plain)) | \(milliseconds(managed)) | \(milliseconds(transform)) | "
          + String(format: "%.1f %%", 100 * transform / plain) + " |")
}
