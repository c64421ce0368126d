#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A placeholder hash of a picture: Evan Wallace's ThumbHash (https://evanw.github.io/thumbhash/),
/// at most 25 bytes that decode to a blurred picture of the right colours, alpha and aspect
/// ratio. The pipeline computes one when it decodes a picture and keeps it with the disk entry
/// (``CacheEntryInfo/placeholder``), so ``ImagePipeline/placeholder(for:)`` answers without
/// reading or decoding the picture.
///
/// The hash is a few low-frequency DCT coefficients of the picture in an LPQ colour space
/// (luminance, yellow–blue, red–green) plus alpha: a 3-byte and a 2-byte header (the averages,
/// the scales, the luminance coefficient count that also gives the aspect ratio), one alpha
/// byte when the picture has transparency, then 4 bits per AC coefficient.
public struct ThumbHash: Hashable, Sendable, CustomStringConvertible {
    /// The hash as the reference implementation writes it.
    public let bytes: [UInt8]

    /// The most bytes a hash has (with alpha, landscape or portrait).
    public static let maxByteCount = 25

    /// The largest side, in pixels, the encoder reads: 100, the reference's limit. A larger
    /// bitmap is first reduced to fit 100 × 100 as the reference reduces it (more pixels would
    /// not change the few coefficients the hash keeps, only cost time).
    public static let maxEncodedSide = 100

    /// The long side, in pixels, of ``bitmap(size:)``'s default size: 32, as the reference
    /// decodes. The hash holds at most 7 × 7 coefficients, so more pixels add no detail.
    public static let defaultDecodedSide = 32

    /// The header fields, read once and checked against the length.
    private let layout: Layout

    /// A hash from its bytes; `nil` when they are not a hash: fewer than 5 or more than
    /// ``maxByteCount``, a luminance coefficient count of 0 (no encoder writes one), or a length
    /// other than the one the header implies (decoding reads exactly as many coefficients as the
    /// header says, so no accepted hash can make it read past the end).
    public init?(bytes: [UInt8]) {
        guard bytes.count >= 5, bytes.count <= Self.maxByteCount,
              let layout = Layout(bytes), layout.byteCount == bytes.count else { return nil }
        self.bytes = bytes
        self.layout = layout
    }

    /// A hash from standard base64 (as `imgpipe info --thumbhash` prints it); `nil` when the
    /// text is not base64 of a hash.
    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64) else { return nil }
        self.init(bytes: [UInt8](data))
    }

    /// The hash in standard base64, with padding.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// The base64 form.
    public var description: String { base64 }

    /// Two hashes are equal when their bytes are (the layout is read from them).
    public static func == (lhs: ThumbHash, rhs: ThumbHash) -> Bool { lhs.bytes == rhs.bytes }

    /// Hashes the bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    // MARK: - Header

    /// Width over height, as the header approximates it (the ratio of the luminance coefficient
    /// counts, e.g. 7 / 5 for a 4:3 landscape picture): the reference's
    /// `thumbHashToApproximateAspectRatio`.
    public var aspectRatio: Double { Double(layout.ratioWidth) / Double(layout.ratioHeight) }

    /// The picture's average colour (alpha-weighted) and average alpha, from the header, as
    /// straight (not premultiplied) 8-bit values: what a cell can fill itself with before it
    /// decodes anything.
    public var averageColor: Color {
        let (r, g, b) = Self.rgb(l: layout.lDC, p: layout.pDC, q: layout.qDC)
        return Color(red: Self.byte(r), green: Self.byte(g), blue: Self.byte(b), alpha: Self.byte(layout.aDC))
    }

    /// A straight-alpha RGBA8 colour (the pipeline's one colour type).
    public typealias Color = RGBAColor

    /// The size ``bitmap(size:)`` renders by default: ``defaultDecodedSide`` (32) pixels on the
    /// long side at ``aspectRatio``, as the reference JavaScript does.
    public var defaultSize: PixelSize {
        let ratio = aspectRatio, side = Double(Self.defaultDecodedSide)
        return ratio > 1
            ? PixelSize(width: Self.defaultDecodedSide, height: max(1, Int((side / ratio).rounded())))
            : PixelSize(width: max(1, Int((side * ratio).rounded())), height: Self.defaultDecodedSide)
    }

    // MARK: - Decoding

    /// Saturation boost the decoder applies to the colour coefficients (the reference's 1.25):
    /// it compensates for the saturation the 4-bit quantization loses.
    static let saturationBoost = 1.25

    /// The blurred picture the hash describes, as premultiplied RGBA8 (like every bitmap the
    /// pipeline hands out).
    ///
    /// - Parameter size: the output size; `nil` (the default) is ``defaultSize``, about 32
    ///   pixels on the long side. The hash is a sum of cosines, continuous over the picture, so
    ///   any size is rendered straight from it (no upscaling of a 32-pixel bitmap); a side
    ///   below 1 is taken as 1.
    /// - Complexity: O(width × height × 4 × 7): per pixel, one multiply-add per channel and
    ///   horizontal frequency.
    public func bitmap(size: PixelSize? = nil) -> Bitmap {
        let size = size ?? defaultSize
        let w = max(1, size.width), h = max(1, size.height)
        let layout = layout
        let coefficients = layout.coefficients(of: bytes)
        let nx = max(layout.lx, layout.hasAlpha ? 5 : 3), ny = max(layout.ly, layout.hasAlpha ? 5 : 3)
        let fx = Self.cosines(count: nx, samples: w), fy = Self.cosines(count: ny, samples: h)
        // Channels L, P, Q, A: their AC coefficients and (cx, cy) in storage order.
        let channels: [(ac: [Double], pairs: [(cx: Int, cy: Int)])] = [
            (coefficients.l, Self.acPairs(nx: layout.lx, ny: layout.ly)), (coefficients.p, Self.acPairs(nx: 3, ny: 3)),
            (coefficients.q, Self.acPairs(nx: 3, ny: 3)), (coefficients.a, layout.hasAlpha ? Self.acPairs(nx: 5, ny: 5) : []),
        ]
        // Separable: for each row, fold the vertical cosines into one weight per channel and
        // horizontal frequency (`columns[channel × nx + cx]`); a pixel then costs one
        // multiply-add per channel and frequency instead of one per coefficient.
        var columns = [Double](repeating: 0, count: 4 * nx)
        var out = [UInt8](repeating: 0, count: w * h * 4)
        out.withUnsafeMutableBufferPointer { rgba in
            columns.withUnsafeMutableBufferPointer { columns in
                var i = 0
                for y in 0..<h {
                    columns.update(repeating: 0)
                    for (c, channel) in channels.enumerated() {
                        for (j, pair) in channel.pairs.enumerated() { columns[c * nx + pair.cx] += channel.ac[j] * fy[y * ny + pair.cy] * 2 }
                    }
                    for x in 0..<w {
                        var l = layout.lDC, p = layout.pDC, q = layout.qDC, a = layout.aDC
                        for cx in 0..<nx {
                            let f = fx[x * nx + cx]
                            l += columns[cx] * f
                            p += columns[nx + cx] * f
                            q += columns[2 * nx + cx] * f
                            a += columns[3 * nx + cx] * f
                        }
                        let (r, g, b) = Self.rgb(l: l, p: p, q: q)
                        rgba[i] = Self.byte(r); rgba[i + 1] = Self.byte(g); rgba[i + 2] = Self.byte(b); rgba[i + 3] = Self.byte(a)
                        i += 4
                    }
                }
            }
            Bitmap.premultiply(rgba)
        }
        return Bitmap(width: w, height: h, bytesPerRow: w * 4, pixelFormat: .rgba8Premultiplied, bytes: out)
            ?? Bitmap(zeroed: PixelSize(width: w, height: h))
    }

    /// `cos(π / samples × (i + 0.5) × c)` for every sample `i` and coefficient `c < count`,
    /// sample-major (`table[i × count + c]`).
    private static func cosines(count: Int, samples: Int) -> [Double] {
        var table = [Double](repeating: 0, count: count * samples)
        for i in 0..<samples {
            for c in 0..<count { table[i * count + c] = cos(Double.pi / Double(samples) * (Double(i) + 0.5) * Double(c)) }
        }
        return table
    }

    /// LPQ to RGB: the inverse of the encoder's `l = (r + g + b) / 3`, `p = (r + g) / 2 − b`,
    /// `q = r − g`.
    private static func rgb(l: Double, p: Double, q: Double) -> (Double, Double, Double) {
        let b = l - 2.0 / 3.0 * p
        let r = (3.0 * l - b + q) / 2.0
        return (r, r - q, b)
    }

    /// A 0…1 value as a byte, clamped and rounded.
    private static func byte(_ value: Double) -> UInt8 { UInt8((max(0, min(1, value)) * 255).rounded()) }

    /// The AC coefficients' (cx, cy) in the order the hash stores them: rows of a triangle of an
    /// `nx` × `ny` grid (`cx × ny < nx × (ny − cy)`), without the DC term (0, 0).
    static func acPairs(nx: Int, ny: Int) -> [(cx: Int, cy: Int)] {
        var pairs: [(cx: Int, cy: Int)] = []
        for cy in 0..<ny {
            var cx = cy == 0 ? 1 : 0
            while cx * ny < nx * (ny - cy) {
                pairs.append((cx, cy))
                cx += 1
            }
        }
        return pairs
    }
}

extension Bitmap {
    /// The blurred picture `thumbHash` describes, as premultiplied RGBA8: the same as
    /// ``ThumbHash/bitmap(size:)`` (`nil` size: about 32 pixels on the long side).
    public init(thumbHash: ThumbHash, size: PixelSize? = nil) {
        self = thumbHash.bitmap(size: size)
    }
}

// MARK: - Encoding

extension ThumbHash {
    /// The hash of `bitmap` (premultiplied or straight), alpha included, as the reference
    /// computes it: the average colour is weighted by alpha and transparent pixels are taken
    /// as that average, so a transparent border does not darken the colours.
    ///
    /// A bitmap larger than ``maxEncodedSide`` (100) on a side is first reduced to fit
    /// 100 × 100 as the reference reduces it (Pillow's `thumbnail`: a bicubic convolution,
    /// `ThumbnailReduction`); within 100 × 100 its pixels are hashed as they are, with the
    /// reference's arithmetic, so the bytes equal the reference's for the same straight RGBA.
    ///
    /// Rounding is half away from zero, as the author's JavaScript and Rust round;
    /// `thumbhash-python` rounds half to even, which differs only on exact ties (for example
    /// the luminance count of a 2:1 picture with alpha, 5 × 1/2 = 2.5).
    ///
    /// - Complexity: one pass over the bitmap when it is larger than 100 × 100 (about
    ///   4 × scale taps per output column of each row), then about 55 multiply-adds per pixel
    ///   of the (at most 100 × 100) picture. Measured in a release build, thread CPU time on a
    ///   busy 2-core VM: 0.4–0.6 ms for 100 × 100 (a 1280 × 800 one, reduced first: the
    ///   benchmarks' "Pictures before they arrive").
    public init(bitmap: Bitmap) {
        let small = Self.fitting(bitmap)
        let rgba = small.unpremultipliedBytes()
        self = Self.encode(width: small.width, height: small.height, rgba: rgba)
    }

    /// `bitmap` when it fits ``maxEncodedSide`` × ``maxEncodedSide``; else, as the reference
    /// sees it, Pillow's `thumbnail((100, 100))` of it (1280 × 960: 100 × 75), straight
    /// (`ThumbnailReduction`). ``BlurHash`` reads the same small picture.
    static func fitting(_ bitmap: Bitmap) -> Bitmap {
        ThumbnailReduction.reduced(bitmap, fitting: maxEncodedSide)
    }

    /// The reference's `rgbaToThumbHash` over straight RGBA8 of at most 100 × 100 pixels, with
    /// its operations in its order (so the floating-point results, and the bytes, agree).
    static func encode(width w: Int, height h: Int, rgba: [UInt8]) -> ThumbHash {
        let count = w * h
        var avgR = 0.0, avgG = 0.0, avgB = 0.0, avgA = 0.0
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            avgR += alpha / 255 * Double(rgba[i * 4])
            avgG += alpha / 255 * Double(rgba[i * 4 + 1])
            avgB += alpha / 255 * Double(rgba[i * 4 + 2])
            avgA += alpha
        }
        if avgA > 0 {
            avgR /= avgA
            avgG /= avgA
            avgB /= avgA
        }
        let hasAlpha = avgA < Double(count)
        let lLimit = hasAlpha ? 5.0 : 7.0
        let longSide = Double(max(w, h))
        let lx = max(1, Int((lLimit * Double(w) / longSide).rounded()))
        let ly = max(1, Int((lLimit * Double(h) / longSide).rounded()))

        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for i in 0..<count {
            let alpha = Double(rgba[i * 4 + 3]) / 255
            let r = avgR * (1 - alpha) + alpha / 255 * Double(rgba[i * 4])
            let g = avgG * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 1])
            let b = avgB * (1 - alpha) + alpha / 255 * Double(rgba[i * 4 + 2])
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = alpha
        }

        let channel = ChannelEncoder(width: w, height: h)
        let lc = channel.encode(l, nx: max(lx, 3), ny: max(ly, 3))
        let pc = channel.encode(p, nx: 3, ny: 3)
        let qc = channel.encode(q, nx: 3, ny: 3)
        let ac = hasAlpha ? channel.encode(a, nx: 5, ny: 5) : (dc: 1.0, ac: [], scale: 1.0)

        let isLandscape = w > h
        let header24 = Self.quantized(63 * lc.dc, bits: 6)
            | Self.quantized(31.5 + 31.5 * pc.dc, bits: 6) << 6
            | Self.quantized(31.5 + 31.5 * qc.dc, bits: 6) << 12
            | Self.quantized(31 * lc.scale, bits: 5) << 18
            | (hasAlpha ? 1 << 23 : 0)
        let header16 = (isLandscape ? ly : lx)
            | Self.quantized(63 * pc.scale, bits: 6) << 3
            | Self.quantized(63 * qc.scale, bits: 6) << 9
            | (isLandscape ? 1 << 15 : 0)
        var hash: [UInt8] = [UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16),
                             UInt8(header16 & 255), UInt8(header16 >> 8)]
        if hasAlpha { hash.append(UInt8(Self.quantized(15 * ac.dc, bits: 4) | Self.quantized(15 * ac.scale, bits: 4) << 4)) }
        let start = hash.count
        let nibbles = lc.ac + pc.ac + qc.ac + (hasAlpha ? ac.ac : [])
        hash += [UInt8](repeating: 0, count: (nibbles.count + 1) / 2)
        for (index, f) in nibbles.enumerated() {
            hash[start + index / 2] |= UInt8(Self.quantized(15 * f, bits: 4) << ((index & 1) * 4))
        }
        // Always a hash: the layout above is the one `Layout` reads back.
        guard let result = ThumbHash(bytes: hash) else { return ThumbHash(unchecked: hash) }
        return result
    }

    /// A hash the encoder wrote, kept even if validation disagreed (it cannot: the fallback only
    /// avoids a crash path).
    private init(unchecked bytes: [UInt8]) {
        self.bytes = bytes
        layout = Layout(bytes) ?? Layout.opaqueGray
    }

    /// `value` rounded (half away from zero) and clamped to `bits` bits.
    private static func quantized(_ value: Double, bits: Int) -> Int {
        guard value.isFinite else { return 0 }
        return min((1 << bits) - 1, max(0, Int(value.rounded())))
    }
}

/// The DCT of one channel over a `width` × `height` picture, with cosine tables built once
/// per picture (the reference recomputes them per coefficient; the values are the same).
private struct ChannelEncoder {
    let width: Int
    let height: Int
    /// `cos(π / width × c × (x + 0.5))`, coefficient-major, for c < 7.
    let fx: [Double]
    /// `cos(π / height × c × (y + 0.5))`, coefficient-major, for c < 7.
    let fy: [Double]
    static let maxCoefficients = 7

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        fx = Self.table(samples: width)
        fy = Self.table(samples: height)
    }

    private static func table(samples: Int) -> [Double] {
        var table = [Double](repeating: 0, count: maxCoefficients * samples)
        for c in 0..<maxCoefficients {
            for i in 0..<samples { table[c * samples + i] = cos(Double.pi / Double(samples) * Double(c) * (Double(i) + 0.5)) }
        }
        return table
    }

    /// The DC term, the AC terms scaled into 0…1 around 0.5, and their largest magnitude.
    ///
    /// Each coefficient is summed in the reference's order (rows top to bottom, pixels left to
    /// right, `(value × fx) × fy`), so the sums are the reference's to the bit; four
    /// coefficients are summed side by side, which keeps four independent additions in flight
    /// instead of one chain.
    func encode(_ channel: [Double], nx: Int, ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
        let pairs = [(cx: 0, cy: 0)] + ThumbHash.acPairs(nx: nx, ny: ny)
        var sums = [Double](repeating: 0, count: pairs.count)
        let width = width, height = height
        channel.withUnsafeBufferPointer { pixels in
            fx.withUnsafeBufferPointer { fx in
                fy.withUnsafeBufferPointer { fy in
                    var k = 0
                    while k < pairs.count {
                        // Four at a time; a short last group repeats its last coefficient.
                        let group = (0..<4).map { pairs[min(k + $0, pairs.count - 1)] }
                        let x0 = group[0].cx * width, x1 = group[1].cx * width, x2 = group[2].cx * width, x3 = group[3].cx * width
                        var f0 = 0.0, f1 = 0.0, f2 = 0.0, f3 = 0.0
                        for y in 0..<height {
                            let y0 = fy[group[0].cy * height + y], y1 = fy[group[1].cy * height + y]
                            let y2 = fy[group[2].cy * height + y], y3 = fy[group[3].cy * height + y]
                            let row = y * width
                            for x in 0..<width {
                                let v = pixels[row + x]
                                f0 += v * fx[x0 + x] * y0
                                f1 += v * fx[x1 + x] * y1
                                f2 += v * fx[x2 + x] * y2
                                f3 += v * fx[x3 + x] * y3
                            }
                        }
                        for (i, f) in [f0, f1, f2, f3].enumerated() where k + i < pairs.count { sums[k + i] = f }
                        k += 4
                    }
                }
            }
        }
        let count = Double(width * height)
        let dc = sums[0] / count
        var ac = sums.dropFirst().map { $0 / count }
        let scale = ac.reduce(0) { max($0, abs($1)) }
        if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
        return (dc, ac, scale)
    }
}

// MARK: - Layout

extension ThumbHash {
    /// What the header says: the DC terms and scales, whether there is alpha, the luminance
    /// grid, and so how many bytes the hash must have.
    fileprivate struct Layout: Hashable, Sendable {
        var lDC: Double, pDC: Double, qDC: Double, lScale: Double
        var pScale: Double, qScale: Double
        var aDC: Double, aScale: Double
        var hasAlpha: Bool
        /// The luminance grid (each at least 3).
        var lx: Int, ly: Int
        /// The unclamped counts the aspect ratio is read from (at least 1).
        var ratioWidth: Int, ratioHeight: Int

        /// A hash whose header says opaque mid-gray with no detail; only a fallback.
        static let opaqueGray = Layout(
            lDC: 0.5, pDC: 0, qDC: 0, lScale: 0, pScale: 0, qScale: 0, aDC: 1, aScale: 0, hasAlpha: false, lx: 3, ly: 3,
            ratioWidth: 1, ratioHeight: 1)

        init(lDC: Double, pDC: Double, qDC: Double, lScale: Double, pScale: Double, qScale: Double, aDC: Double,
             aScale: Double, hasAlpha: Bool, lx: Int, ly: Int, ratioWidth: Int, ratioHeight: Int) {
            self.lDC = lDC
            self.pDC = pDC
            self.qDC = qDC
            self.lScale = lScale
            self.pScale = pScale
            self.qScale = qScale
            self.aDC = aDC
            self.aScale = aScale
            self.hasAlpha = hasAlpha
            self.lx = lx
            self.ly = ly
            self.ratioWidth = ratioWidth
            self.ratioHeight = ratioHeight
        }

        /// Reads the header of `bytes` (at least 5); `nil` when the luminance count is 0 or an
        /// alpha byte is missing.
        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 5 else { return nil }
            let header24 = Int(bytes[0]) | Int(bytes[1]) << 8 | Int(bytes[2]) << 16
            let header16 = Int(bytes[3]) | Int(bytes[4]) << 8
            lDC = Double(header24 & 63) / 63
            pDC = Double((header24 >> 6) & 63) / 31.5 - 1
            qDC = Double((header24 >> 12) & 63) / 31.5 - 1
            lScale = Double((header24 >> 18) & 31) / 31
            hasAlpha = header24 >> 23 != 0
            pScale = Double((header16 >> 3) & 63) / 63
            qScale = Double((header16 >> 9) & 63) / 63
            let isLandscape = header16 >> 15 != 0
            let lCount = header16 & 7, lMax = hasAlpha ? 5 : 7
            guard lCount > 0, !hasAlpha || bytes.count >= 6 else { return nil }
            ratioWidth = isLandscape ? lMax : lCount
            ratioHeight = isLandscape ? lCount : lMax
            lx = max(3, ratioWidth)
            ly = max(3, ratioHeight)
            aDC = hasAlpha ? Double(bytes[5] & 15) / 15 : 1
            aScale = hasAlpha ? Double(bytes[5] >> 4) / 15 : 1
        }

        /// The number of AC coefficients: luminance, P and Q (5 each), alpha (14) if any.
        var acCount: Int {
            ThumbHash.acPairs(nx: lx, ny: ly).count + 10 + (hasAlpha ? 14 : 0)
        }

        /// The exact length of a hash with this header: the headers, then 4 bits a coefficient.
        var byteCount: Int { (hasAlpha ? 6 : 5) + (acCount + 1) / 2 }

        /// The AC coefficients of `bytes` (whose length is ``byteCount``), scaled, colour
        /// boosted by ``ThumbHash/saturationBoost``.
        func coefficients(of bytes: [UInt8]) -> (l: [Double], p: [Double], q: [Double], a: [Double]) {
            var index = 0
            let start = hasAlpha ? 6 : 5
            func read(_ count: Int, scale: Double) -> [Double] {
                (0..<count).map { _ in
                    let byte = start + index / 2
                    let nibble = byte < bytes.count ? Int(bytes[byte] >> ((index & 1) * 4)) & 15 : 7
                    index += 1
                    return (Double(nibble) / 7.5 - 1) * scale
                }
            }
            let l = read(ThumbHash.acPairs(nx: lx, ny: ly).count, scale: lScale)
            let p = read(5, scale: pScale * ThumbHash.saturationBoost)
            let q = read(5, scale: qScale * ThumbHash.saturationBoost)
            let a = hasAlpha ? read(14, scale: aScale) : []
            return (l, p, q, a)
        }
    }
}
