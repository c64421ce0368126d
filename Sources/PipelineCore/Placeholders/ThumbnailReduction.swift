/// The small picture the placeholder hashes read, made as their reference makes it:
/// `thumbhash-python` hashes the picture after Pillow's `Image.thumbnail((100, 100))`, so a
/// hash of ours is comparable with the reference's (and with hashes other services publish)
/// only from the same pixels. What Pillow 10.x's `thumbnail` does to the RGBA picture the
/// reference gives it:
///
/// 1. the output size: 100 on the long side, the other side the whole number whose aspect
///    ratio is nearest the picture's (`preserve_aspect_ratio`, never 0);
/// 2. a bicubic (Keys, a = −0.5) convolution of the premultiplied pixels (Pillow's `RGBa`)
///    straight from full size to that size, its support widened by the scale (antialiasing),
///    horizontally then vertically, each pass rounded to 8 bits with Pillow's 22-bit
///    fixed-point coefficients; then straight again (`⌊255 c / a⌋`).
///
/// Neither of Pillow's shortcuts applies: the reference converts to RGBA first, so the JPEG
/// `draft` (DCT scaling) finds a loaded picture, and `resize` hands an RGBA picture on as
/// `RGBa` without its `reducing_gap`, so there is no box `reduce` either. On the same decoded
/// pixels the result is Pillow's to the byte.
///
/// A box average of whole pixels to 100 × 100 (what ``ThumbHash`` read before) aliases fine
/// detail differently: on `Samples/mandelbrot.jpg` its hash decoded 6.3 levels (mean, of 255)
/// from the reference's.
enum ThumbnailReduction {
    /// Pillow's `thumbnail` size of `source` in a `side` × `side` box, or `nil` when it fits
    /// (Pillow leaves such a picture as it is).
    static func outputSize(of source: PixelSize, fitting side: Int) -> PixelSize? {
        guard source.width > side || source.height > side else { return nil }
        let aspect = Double(source.width) / Double(source.height)
        // `round_aspect`: floor or ceil, whichever keeps the aspect ratio closer (floor on a
        // tie), at least 1.
        func nearest(_ value: Double, _ error: (Double) -> Double) -> Int {
            let low = value.rounded(.down), high = value.rounded(.up)
            return max(Int(error(high) < error(low) ? high : low), 1)
        }
        if 1 >= aspect {
            let width = nearest(Double(side) * aspect) { abs(aspect - $0 / Double(side)) }
            return PixelSize(width: width, height: side)
        }
        let height = nearest(Double(side) / aspect) { $0 == 0 ? 0 : abs(aspect - Double(side) / $0) }
        return PixelSize(width: side, height: height)
    }

    /// `bitmap` (straight or premultiplied) reduced as Pillow's `thumbnail((side, side))`
    /// reduces it, straight; `bitmap` itself when it fits.
    /// - Complexity: one pass over `bitmap`, about 4 × scale taps per output column of each
    ///   row (premultiplying a row at a time: no full-size copy), then the vertical pass over
    ///   the `side`-wide intermediate.
    static func reduced(_ bitmap: Bitmap, fitting side: Int) -> Bitmap {
        guard let output = outputSize(of: bitmap.size, fitting: side) else { return bitmap }
        var resized = Plane.horizontal(bitmap, to: output.width).resampledVertically(to: output.height, span: Double(bitmap.height))
        resized.unpremultiply()
        // A Plane's rows are packed and never empty, so this cannot fail.
        return Bitmap(width: resized.width, height: resized.height, bytesPerRow: resized.width * 4, pixelFormat: .rgba8Straight,
                      bytes: resized.bytes) ?? bitmap
    }

    /// Premultiplied RGBA8, tightly packed, as Pillow's `RGBa` mode holds it.
    struct Plane {
        var width: Int
        var height: Int
        var bytes: [UInt8]

        /// Pillow's `MULDIV255`: `a × b / 255`, rounded.
        @inline(__always) static func mulDiv255(_ a: Int, _ b: Int) -> UInt8 {
            let t = a * b + 128
            return UInt8(((t >> 8) + t) >> 8)
        }

        /// Pillow's `rgba2rgbA`: `⌊255 c / a⌋` (alpha 0 and 255 kept as they are).
        mutating func unpremultiply() {
            bytes.withUnsafeMutableBufferPointer { px in
                var p = 0
                while p < px.count {
                    let alpha = Int(px[p + 3])
                    if alpha != 0 && alpha != 255 {
                        for c in 0..<3 { px[p + c] = UInt8(min(255, 255 * Int(px[p + c]) / alpha)) }
                    }
                    p += 4
                }
            }
        }

        /// One axis of Pillow's `ImagingResample` with its bicubic filter: for output `i`, the
        /// centre `(i + 0.5) × span / count` in the source, weights over `±2 × max(1, scale)`,
        /// normalised, as 22-bit fixed point. `weights` holds `taps` a row (zeros past `count`).
        static func coefficients(inputCount: Int, span: Double, outputCount: Int)
            -> (bounds: [(start: Int, count: Int)], weights: [Int], taps: Int) {
            let scale = span / Double(outputCount)
            let filterScale = max(scale, 1)
            let support = 2 * filterScale, step = 1 / filterScale
            let taps = Int(support.rounded(.up)) * 2 + 1
            var bounds: [(start: Int, count: Int)] = [], weights = [Int](repeating: 0, count: outputCount * taps)
            for i in 0..<outputCount {
                let center = (Double(i) + 0.5) * scale
                let start = max(0, Int(center - support + 0.5))
                let end = min(inputCount, Int(center + support + 0.5))
                var k = (start..<max(start, end)).map { bicubic((Double($0) - center + 0.5) * step) }
                let total = k.reduce(0, +)
                if total != 0 { k = k.map { $0 / total } }
                k = Array(k.prefix(taps))  // never more: 2 × support + 1 at most
                bounds.append((start, k.count))
                for (j, w) in k.enumerated() { weights[i * taps + j] = Int(((w < 0 ? -0.5 : 0.5) + w * Double(1 << 22)).rounded(.towardZero)) }
            }
            return (bounds, weights, taps)
        }

        /// Keys' cubic with a = −0.5, as Pillow's `bicubic_filter`.
        static func bicubic(_ value: Double) -> Double {
            let a = -0.5, x = abs(value)
            if x < 1 { return ((a + 2) * x - (a + 3)) * x * x + 1 }
            if x < 2 { return (((x - 5) * x + 8) * x - 4) * a }
            return 0
        }

        /// Pillow's `clip8`: the sum (with its 2²¹ rounding term) shifted down 22 bits, in 0…255.
        @inline(__always) static func clip8(_ sum: Int) -> UInt8 {
            if sum >= 1 << 30 { return 255 }
            if sum <= 0 { return 0 }
            return UInt8(clamping: sum >> 22)
        }

        /// The horizontal pass from `bitmap` to `outW` columns, each row premultiplied (Pillow's
        /// `MULDIV255`; a premultiplied bitmap's as it is) as it is read.
        static func horizontal(_ bitmap: Bitmap, to outW: Int) -> Plane {
            let (bounds, weights, taps) = coefficients(inputCount: bitmap.width, span: Double(bitmap.width), outputCount: outW)
            let w = bitmap.width, h = bitmap.height, stride = bitmap.bytesPerRow, straight = !bitmap.pixelFormat.isPremultiplied
            var out = [UInt8](repeating: 0, count: outW * h * 4)
            var row = [Int](repeating: 0, count: w * 4)
            bitmap.withUnsafeBytes { source in
                weights.withUnsafeBufferPointer { weights in
                    row.withUnsafeMutableBufferPointer { row in
                        out.withUnsafeMutableBufferPointer { out in
                            for y in 0..<h {
                                let base = y * stride
                                for x in 0..<w {
                                    let p = base + x * 4, alpha = Int(source[p + 3])
                                    for c in 0..<3 {
                                        row[x * 4 + c] = straight ? Int(mulDiv255(Int(source[p + c]), alpha)) : Int(source[p + c])
                                    }
                                    row[x * 4 + 3] = alpha
                                }
                                for x in 0..<outW {
                                    let (start, count) = bounds[x]
                                    var s0 = 1 << 21, s1 = 1 << 21, s2 = 1 << 21, s3 = 1 << 21
                                    for j in 0..<count {
                                        let k = weights[x * taps + j], q = (start + j) * 4
                                        s0 += row[q] * k
                                        s1 += row[q + 1] * k
                                        s2 += row[q + 2] * k
                                        s3 += row[q + 3] * k
                                    }
                                    let o = (y * outW + x) * 4
                                    out[o] = clip8(s0)
                                    out[o + 1] = clip8(s1)
                                    out[o + 2] = clip8(s2)
                                    out[o + 3] = clip8(s3)
                                }
                            }
                        }
                    }
                }
            }
            return Plane(width: outW, height: h, bytes: out)
        }

        /// The vertical pass to `outH` rows from the picture's exact span of `span` rows.
        func resampledVertically(to outH: Int, span: Double) -> Plane {
            let (bounds, weights, taps) = Self.coefficients(inputCount: height, span: span, outputCount: outH)
            var out = [UInt8](repeating: 0, count: width * outH * 4)
            let rowBytes = width * 4
            bytes.withUnsafeBufferPointer { source in
                weights.withUnsafeBufferPointer { weights in
                    out.withUnsafeMutableBufferPointer { out in
                        for y in 0..<outH {
                            let (start, count) = bounds[y]
                            for i in 0..<rowBytes {
                                var sum = 1 << 21
                                for j in 0..<count { sum += Int(source[(start + j) * rowBytes + i]) * weights[y * taps + j] }
                                out[y * rowBytes + i] = Self.clip8(sum)
                            }
                        }
                    }
                }
            }
            return Plane(width: width, height: outH, bytes: out)
        }
    }
}
