import Foundation
import PipelineCore

/// `ProcessorBenchmark RUNS adjust`: each ``ColorAdjustment`` step alone and all of them in one
/// pass on the opaque `input` (the same pixels `Benchmarks/processors.sh` gives Pillow's
/// `ImageEnhance` beside it), then on the same picture with an alpha ramp, premultiplied (rows
/// with translucent pixels are made straight and premultiplied back within the pass).
func colorAdjustments(_ input: Bitmap) throws {
    var bytes = input.withUnsafeBytes { Array($0) }
    for i in stride(from: 0, to: bytes.count, by: 4) {
        let a = UInt32((i / 4) % input.width * 255 / max(1, input.width - 1))
        for c in 0..<3 { bytes[i + c] = UInt8((UInt32(bytes[i + c]) * a + 127) / 255) }
        bytes[i + 3] = UInt8(a)
    }
    guard let translucent = Bitmap(width: input.width, height: input.height, bytesPerRow: input.width * 4, bytes: bytes) else { return }
    let steps: [(String, ColorAdjustment)] = [
        ("brightness(1.3)", ColorAdjustment(brightness: 1.3)), ("brightness(offset: 40)", ColorAdjustment(brightnessOffset: 40)),
        ("contrast(1.5)", ColorAdjustment(contrast: 1.5)), ("saturation(1.6)", ColorAdjustment(saturation: 1.6)),
        ("hue(degrees: 30)", ColorAdjustment(hue: 30)), ("gamma(2.2)", ColorAdjustment(gamma: 2.2)),
        ("brightness 1.1, contrast 1.4, saturation 0.7 (one pass)", ColorAdjustment(brightness: 1.1, contrast: 1.4, saturation: 0.7)),
        ("all six (one pass)", ColorAdjustment(brightnessOffset: -10, brightness: 1.1, contrast: 1.4, saturation: 0.7, hue: 30, gamma: 1.8)),
    ]
    print("| colorAdjustment (\(input.width)×\(input.height)) | opaque ms | premultiplied, alpha ramp ms |")
    print("|---|---:|---:|")
    for (name, adjustment) in steps {
        let processor = ImageProcessor.colorAdjustment(adjustment)
        let opaque = try time { try processor.process(input) }
        let alpha = try time { try processor.process(translucent) }
        print("| \(name) | \(String(format: "%.2f", opaque)) | \(String(format: "%.2f", alpha)) |")
    }
}
