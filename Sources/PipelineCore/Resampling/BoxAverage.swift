extension Bitmap {
    /// This bitmap reduced to `size` (at most its own size on each side), each output pixel the
    /// plain average of the source pixels it covers (boundaries rounded to whole pixels), in
    /// this bitmap's ``pixelFormat``. `self` when `size` is its size or not smaller.
    ///
    /// The average is weighted by alpha either way: a premultiplied bitmap's channels are
    /// averaged as they are; a straight one's colour is `Σ(alpha × colour) / Σ alpha`, so a
    /// transparent pixel's colour counts for nothing, with no premultiplied copy made.
    ///
    /// Cheaper than ``Resampler``'s area average (integer sums, one pass, no filter tables, no
    /// premultiplied copy of a straight bitmap), and nearly as even: the source pixels are
    /// split among the output pixels in runs that differ in length by at most one, where the
    /// area average weighs fractions of the pixels on each boundary.
    /// - Complexity: O(width × height), about one add per byte read.
    func boxAveraged(to size: PixelSize) -> Bitmap {
        guard size.isValid, size.width <= width, size.height <= height, size != self.size else { return self }
        let outWidth = size.width, outHeight = size.height
        // Output column j takes source columns columnStart[j] ..< columnStart[j + 1], its exact
        // span j × width / outWidth ..< (j + 1) × width / outWidth rounded to whole columns
        // (each run is at least one column: this only reduces); rows alike.
        let columnStart = (0...outWidth).map { ($0 * width + outWidth / 2) / outWidth }
        let rowStart = (0...outHeight).map { ($0 * height + outHeight / 2) / outHeight }
        let straight = !pixelFormat.isPremultiplied, stride = bytesPerRow
        var out = [UInt8](repeating: 0, count: outWidth * outHeight * 4)
        // Sums of one band of rows, per output column: Int, so a block of any size cannot
        // overflow (255 × 255 per pixel).
        var sums = [Int](repeating: 0, count: outWidth * 4)
        withUnsafeBytes { source in
            sums.withUnsafeMutableBufferPointer { sums in
                out.withUnsafeMutableBufferPointer { out in
                    for oy in 0..<outHeight {
                        sums.update(repeating: 0)
                        let y0 = rowStart[oy], y1 = rowStart[oy + 1]
                        for y in y0..<y1 {
                            var p = y * stride
                            for ox in 0..<outWidth {
                                let count = columnStart[ox + 1] - columnStart[ox]
                                var r = 0, g = 0, b = 0, a = 0
                                if straight {
                                    for _ in 0..<count {
                                        let alpha = Int(source[p + 3])
                                        r += Int(source[p]) * alpha
                                        g += Int(source[p + 1]) * alpha
                                        b += Int(source[p + 2]) * alpha
                                        a += alpha
                                        p += 4
                                    }
                                } else {
                                    for _ in 0..<count {
                                        r += Int(source[p])
                                        g += Int(source[p + 1])
                                        b += Int(source[p + 2])
                                        a += Int(source[p + 3])
                                        p += 4
                                    }
                                }
                                let s = ox * 4
                                sums[s] += r
                                sums[s + 1] += g
                                sums[s + 2] += b
                                sums[s + 3] += a
                            }
                        }
                        for ox in 0..<outWidth {
                            let s = ox * 4, o = (oy * outWidth + ox) * 4
                            let n = (y1 - y0) * (columnStart[ox + 1] - columnStart[ox]), alpha = sums[s + 3]
                            // Straight: colour over the alpha sum; premultiplied: over the count.
                            let divisor = straight ? alpha : n
                            if divisor > 0 {
                                out[o] = UInt8(min(255, (sums[s] + divisor / 2) / divisor))
                                out[o + 1] = UInt8(min(255, (sums[s + 1] + divisor / 2) / divisor))
                                out[o + 2] = UInt8(min(255, (sums[s + 2] + divisor / 2) / divisor))
                            }
                            out[o + 3] = UInt8(min(255, (alpha + n / 2) / n))
                        }
                    }
                }
            }
        }
        return Bitmap(width: outWidth, height: outHeight, bytesPerRow: outWidth * 4, pixelFormat: pixelFormat, bytes: out) ?? self
    }
}
