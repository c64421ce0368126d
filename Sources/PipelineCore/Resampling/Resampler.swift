/// The filter that turns decoded pixels into the output size, after the decoder's own
/// shrink-on-load (JPEG DCT scaling, libwebp's scaling). Part of ``ProcessingOptions`` and so
/// of the memory key: two filters never share a cache entry.
public enum ResamplingFilter: String, Hashable, Sendable, CaseIterable {
    /// Exact area average for downscaling (every source pixel weighted by how much of it falls
    /// inside the output pixel), tent (bilinear) for upscaling. The fastest; softer, and it
    /// lets fine periodic detail alias (moiré).
    case areaAverage = "area"
    /// Lanczos-3 (windowed sinc, three lobes; vipsthumbnail's and Pillow's `LANCZOS`): sharper
    /// and far less moiré. A large reduction is first box-averaged by an integer factor so the
    /// Lanczos step reduces by 2–4× (as libvips does), which keeps it fast.
    case lanczos3 = "lanczos3"

    /// The filter requests use unless they ask for another.
    public static let `default`: ResamplingFilter = .lanczos3
}

/// Turns premultiplied RGBA8 pixels into an exact output size with a ``ResamplingFilter``.
///
/// The area average and the tent filter work on premultiplied values, which is what makes
/// averaging across transparent edges correct (no dark fringes). Lanczos-3 does too, and clamps
/// each colour to its alpha (its negative lobes can ring below the alpha of an edge).
///
/// Rows are pushed one at a time, top to bottom, so a decoder that produces rows (libpng) can
/// shrink while it reads and never hold the full-size bitmap: memory is the output plus a few
/// rows (area: accumulators of the open output rows; Lanczos: a ring of filtered source rows as
/// tall as the kernel).
public struct RowResampler: ~Copyable {
    /// Source rows expected, top to bottom.
    public let sourceSize: PixelSize
    /// The output size.
    public let outputSize: PixelSize
    /// The filter in use.
    public let filter: ResamplingFilter

    private let rows: any RowFiltering

    /// Prepares to turn `crop` of a `sourceSize` picture into `outputSize` pixels with `filter`.
    public init(sourceSize: PixelSize, crop: PixelRect? = nil, outputSize: PixelSize,
                filter: ResamplingFilter = .default) {
        precondition(sourceSize.isValid && outputSize.isValid, "resampler sizes must be positive")
        let crop = crop ?? PixelRect(sourceSize)
        self.sourceSize = sourceSize
        self.outputSize = outputSize
        self.filter = filter
        switch filter {
        case .areaAverage: rows = AreaRows(sourceSize: sourceSize, crop: crop, outputSize: outputSize)
        case .lanczos3: rows = LanczosRows(sourceSize: sourceSize, crop: crop, outputSize: outputSize)
        }
    }

    /// Whether the next pushed row contributes to the output. A decoder may skip the row's
    /// conversion work when it does not (rows above or below a `.fill` crop).
    public var nextRowIsNeeded: Bool { rows.nextRowIsNeeded }

    /// Adds the next source row: `sourceSize.width` premultiplied RGBA8 pixels.
    public mutating func push(row: UnsafeBufferPointer<UInt8>) {
        precondition(row.count >= sourceSize.width * 4, "row shorter than the source width")
        rows.push(row: row)
    }

    /// The finished output. Output rows no source row reached (a truncated source) stay
    /// transparent; a row only partly reached keeps the weight it got, so it comes out fainter.
    public consuming func finish() -> Bitmap {
        rows.finish()
    }
}

/// One filter's row-at-a-time state behind a ``RowResampler`` (which is its only owner).
protocol RowFiltering: AnyObject {
    var nextRowIsNeeded: Bool { get }
    func push(row: UnsafeBufferPointer<UInt8>)
    func finish() -> Bitmap
}

/// Area average (tent when enlarging): each source row is filtered horizontally and added,
/// weighted, into the accumulators of the output rows it touches.
final class AreaRows: RowFiltering {
    private let sourceSize: PixelSize
    private let outputSize: PixelSize
    private let horizontal: FilterTable
    private let vertical: FilterTable
    private var output: Bitmap
    /// Accumulators for output rows that have received some but not all of their source rows.
    private var pending: [Int: [Float]] = [:]
    private var firstOpenRow = 0
    private var nextSourceRow = 0
    private var scratch: [Float]

    init(sourceSize: PixelSize, crop: PixelRect, outputSize: PixelSize) {
        self.sourceSize = sourceSize
        self.outputSize = outputSize
        horizontal = FilterTable(sourceLength: sourceSize.width, start: crop.x, span: crop.width, outputLength: outputSize.width)
        vertical = FilterTable(sourceLength: sourceSize.height, start: crop.y, span: crop.height, outputLength: outputSize.height)
        output = Bitmap(zeroed: outputSize)
        scratch = [Float](repeating: 0, count: outputSize.width * 4)
    }

    var nextRowIsNeeded: Bool {
        nextSourceRow < sourceSize.height && vertical.contributes(nextSourceRow)
    }

    func push(row: UnsafeBufferPointer<UInt8>) {
        let r = nextSourceRow
        precondition(r < sourceSize.height, "more rows pushed than the source height")
        nextSourceRow += 1
        guard vertical.contributes(r) else { finishRows(through: r); return }

        horizontal.apply(row, into: &scratch)
        var y = firstOpenRow
        while y < outputSize.height, vertical.starts[y] <= r {
            let weight = vertical.weight(output: y, source: r)
            if weight != 0 {
                // Mutated in place through the dictionary's default-value subscript (whose default
                // is built only for a new row): no copy of the accumulator per source row.
                let width = outputSize.width * 4
                scratch.withUnsafeBufferPointer { s in
                    pending[y, default: [Float](repeating: 0, count: width)].withUnsafeMutableBufferPointer { a in
                        for i in 0..<a.count { a[i] += s[i] * weight }
                    }
                }
            }
            y += 1
        }
        finishRows(through: r)
    }

    func finish() -> Bitmap {
        finishRows(through: Int.max)
        return output
    }

    /// Writes out every output row whose last source row is at or before `r`.
    private func finishRows(through r: Int) {
        while firstOpenRow < outputSize.height, vertical.lastSource(firstOpenRow) <= r {
            let y = firstOpenRow
            if let acc = pending.removeValue(forKey: y) {
                let rowOffset = y * output.bytesPerRow
                output.withUnsafeMutableBytes { out in
                    for i in 0..<acc.count {
                        out[rowOffset + i] = UInt8(min(255, max(0, acc[i] + 0.5)))
                    }
                }
            }
            firstOpenRow += 1
        }
    }
}

/// One-shot resampling of a whole bitmap.
public enum Resampler {
    /// `bitmap`'s `crop` (all of it by default) scaled to exactly `outputSize` with `filter`.
    public static func resample(_ bitmap: Bitmap, crop: PixelRect? = nil, to outputSize: PixelSize,
                                filter: ResamplingFilter = .default) -> Bitmap {
        let crop = crop ?? PixelRect(bitmap.size)
        if outputSize == bitmap.size && crop == PixelRect(bitmap.size) { return bitmap }
        var resampler = RowResampler(sourceSize: bitmap.size, crop: crop, outputSize: outputSize, filter: filter)
        bitmap.withUnsafeBytes { bytes in
            for y in 0..<bitmap.height {
                let offset = y * bitmap.bytesPerRow
                resampler.push(row: UnsafeBufferPointer(rebasing: bytes[offset..<(offset + bitmap.width * 4)]))
            }
        }
        return resampler.finish()
    }

    /// Applies a ``ResizePlan`` to a decoded bitmap, which may already be smaller than the
    /// plan's source (a decoder that shrank on the way): the crop is scaled to match.
    public static func resample(_ bitmap: Bitmap, plan: ResizePlan, filter: ResamplingFilter = .default) -> Bitmap {
        let crop = plan.crop.scaled(from: plan.sourceSize, to: bitmap.size)
        return resample(bitmap, crop: crop, to: plan.outputSize, filter: filter)
    }
}

/// Per-output-pixel source ranges and weights along one axis.
struct FilterTable {
    /// First source index for each output index.
    private(set) var starts: [Int]
    /// Number of source indices for each output index.
    private(set) var counts: [Int]
    /// Offset of each output index's weights in `weights`.
    private var offsets: [Int]
    private var weights: [Float]
    /// The first and last source indices any output uses.
    private var usedRange: ClosedRange<Int>

    init(sourceLength: Int, start: Double, span: Double, outputLength: Int) {
        let scale = span / Double(outputLength)  // source pixels per output pixel
        starts = []; counts = []; offsets = []; weights = []
        starts.reserveCapacity(outputLength)
        var lowest = Int.max, highest = Int.min
        for i in 0..<outputLength {
            var taps: [(Int, Double)] = []
            if scale >= 1 {
                // Area average: overlap of [a, b) with each source cell [k, k+1).
                let a = start + Double(i) * scale, b = a + scale
                var k = max(0, Int(a.rounded(.down)))
                while Double(k) < b && k < sourceLength {
                    let overlap = min(b, Double(k + 1)) - max(a, Double(k))
                    if overlap > 1e-9 { taps.append((k, overlap)) }
                    k += 1
                }
            } else {
                // Tent filter of radius 1 source pixel around the output pixel's centre.
                let centre = start + (Double(i) + 0.5) * scale - 0.5
                let k0 = Int(centre.rounded(.down))
                for k in k0...(k0 + 1) {
                    let w = 1 - abs(centre - Double(k))
                    if w > 1e-9 { taps.append((min(max(k, 0), sourceLength - 1), w)) }
                }
            }
            if taps.isEmpty { taps = [(min(max(Int(start), 0), sourceLength - 1), 1)] }
            // Merge clamped duplicates and normalise so the weights sum to 1.
            let indices = taps.map(\.0)  // never empty (one tap at least, above)
            let first = indices.min() ?? 0, last = indices.max() ?? first
            var dense = [Double](repeating: 0, count: last - first + 1)
            for (k, w) in taps { dense[k - first] += w }
            let total = dense.reduce(0, +)
            starts.append(first)
            counts.append(dense.count)
            offsets.append(weights.count)
            weights.append(contentsOf: dense.map { Float($0 / total) })
            lowest = min(lowest, first)
            highest = max(highest, last)
        }
        usedRange = lowest...highest
    }

    func contributes(_ source: Int) -> Bool { usedRange.contains(source) }

    /// The last source index output `i` needs.
    func lastSource(_ i: Int) -> Int { starts[i] + counts[i] - 1 }

    /// The weight of source index `s` in output `i` (0 when outside its range).
    func weight(output i: Int, source s: Int) -> Float {
        let k = s - starts[i]
        return k >= 0 && k < counts[i] ? weights[offsets[i] + k] : 0
    }

    /// Filters one RGBA8 row into `out` (output length × 4 floats).
    func apply(_ row: UnsafeBufferPointer<UInt8>, into out: inout [Float]) {
        weights.withUnsafeBufferPointer { w in
            out.withUnsafeMutableBufferPointer { o in
                for i in 0..<starts.count {
                    var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                    var p = starts[i] * 4
                    let base = offsets[i]
                    for k in 0..<counts[i] {
                        let weight = w[base + k]
                        r += Float(row[p]) * weight
                        g += Float(row[p + 1]) * weight
                        b += Float(row[p + 2]) * weight
                        a += Float(row[p + 3]) * weight
                        p += 4
                    }
                    o[i * 4] = r
                    o[i * 4 + 1] = g
                    o[i * 4 + 2] = b
                    o[i * 4 + 3] = a
                }
            }
        }
    }
}
