import PipelineCore

/// The mean and the largest absolute difference per channel value (R, G, B and A, 0–255) of two
/// bitmaps, both compared premultiplied (as they are shown); `(infinity, Int.max)` when their
/// sizes differ, so a size mismatch can never pass a bound.
public func absoluteDifference(_ a: Bitmap, _ b: Bitmap) -> (mean: Double, max: Int) {
    guard a.size == b.size else { return (.infinity, .max) }
    let x = a.premultiplied(), y = b.premultiplied()
    var total = 0, largest = 0
    for row in 0..<a.height {
        for column in 0..<a.width {
            let p = x.pixel(x: column, y: row), q = y.pixel(x: column, y: row)
            for d in [Int(p.r) - Int(q.r), Int(p.g) - Int(q.g), Int(p.b) - Int(q.b), Int(p.a) - Int(q.a)] {
                total += abs(d)
                largest = max(largest, abs(d))
            }
        }
    }
    return (Double(total) / Double(a.width * a.height * 4), largest)
}

/// Straight RGBA8 for `size` whose every third pixel is fully transparent yet has a colour (and
/// the others a varying alpha): what a lossless encoder must keep exactly, colour under
/// transparency included.
public func straightRGBAWithColourUnderTransparency(_ size: PixelSize) -> [UInt8] {
    var straight = [UInt8](repeating: 0, count: size.pixelCount * 4)
    for pixel in 0..<size.pixelCount {
        straight[pixel * 4] = UInt8(pixel % 256)
        straight[pixel * 4 + 1] = UInt8((pixel * 7) % 256)
        straight[pixel * 4 + 2] = 200
        straight[pixel * 4 + 3] = pixel % 3 == 0 ? 0 : UInt8(pixel % 256)
    }
    return straight
}
