// Cost of each built-in processor on a 512×512 opaque photo-like bitmap, and of the three-pass
// box approximation of the same blur, in milliseconds (minimum of N runs). Run by
// Benchmarks/processors.sh, which times Pillow and vips on the same machine beside it.
import Foundation
import PipelineCore

let runs = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 7
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
