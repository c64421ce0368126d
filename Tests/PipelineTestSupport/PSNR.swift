import Foundation
import PipelineCore

/// Peak signal-to-noise ratio in dB between two 8-bit pixel buffers: over the bytes `channels`
/// of every `stride`-byte pixel that `include` (given the pixel's index) selects. Infinity when
/// the selected bytes are equal (or none are selected); 0 when the buffers differ in length, so
/// a size mismatch can never pass a threshold.
public func psnr(_ a: [UInt8], _ b: [UInt8], channels: [Int] = [0, 1, 2], stride: Int = 4,
                 include: (Int) -> Bool = { _ in true }) -> Double {
    guard a.count == b.count else { return 0 }
    var squared = 0.0, count = 0
    for pixel in 0..<a.count / stride where include(pixel) {
        for c in channels {
            let d = Double(Int(a[pixel * stride + c]) - Int(b[pixel * stride + c]))
            squared += d * d
            count += 1
        }
    }
    guard count > 0, squared > 0 else { return .infinity }
    return 10 * log10(255 * 255 / (squared / Double(count)))
}

/// ``psnr(_:_:channels:stride:include:)`` over R, G and B of two bitmaps as stored
/// (premultiplied); 0 when their sizes differ.
public func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
    guard a.size == b.size else { return 0 }
    return psnr(a.packedBytes, b.packedBytes)
}

extension Bitmap {
    /// The pixels as stored, rows packed (`width × 4` bytes each, any row padding left out).
    fileprivate var packedBytes: [UInt8] {
        (0..<height).flatMap { y in (0..<width).flatMap { x in let p = pixel(x: x, y: y); return [p.r, p.g, p.b, p.a] } }
    }
}
