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
