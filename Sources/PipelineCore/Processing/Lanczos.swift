import Foundation

/// Lanczos-3 weights along one axis: for each output index, a run of source indices and their
/// weights, normalised to sum to 1.
///
/// Output pixel `i` is centred at `start + (i + 0.5) × scale` in source coordinates (pixel `k`
/// covers `[k, k + 1)`); when reducing, the kernel is stretched by the scale (support
/// `3 × scale`). Taps that fall outside the source are dropped and the rest renormalised, as
/// Pillow does; taps outside a crop but inside the source are used.
struct LanczosTable {
    /// First source index for each output index.
    private(set) var starts: [Int]
    /// Number of source indices for each output index.
    private(set) var counts: [Int]
    /// Offset of each output index's weights in ``weights``.
    private(set) var offsets: [Int]
    /// All weights, output by output.
    private(set) var weights: [Float]
    /// The most taps any output has.
    private(set) var widest: Int
    /// The first and last source indices any output uses.
    private(set) var usedRange: ClosedRange<Int>

    /// The Lanczos-3 kernel: `sinc(x) · sinc(x / 3)` inside `|x| < 3`.
    static func kernel(_ x: Double) -> Double {
        let x = abs(x)
        if x < 1e-9 { return 1 }
        if x >= 3 { return 0 }
        let px = Double.pi * x
        return 3 * sin(px) * sin(px / 3) / (px * px)
    }

    init(sourceLength: Int, start: Double, span: Double, outputLength: Int) {
        let scale = span / Double(outputLength)
        let stretch = max(scale, 1)
        let support = 3 * stretch
        starts = []; counts = []; offsets = []; weights = []
        starts.reserveCapacity(outputLength)
        counts.reserveCapacity(outputLength)
        offsets.reserveCapacity(outputLength)
        var lowest = Int.max, highest = Int.min, widest = 1
        var taps: [Double] = []
        for i in 0..<outputLength {
            let centre = start + (Double(i) + 0.5) * scale
            var first = max(0, Int((centre - support + 0.5).rounded(.towardZero)))
            var end = min(sourceLength, Int((centre + support + 0.5).rounded(.towardZero)))
            taps.removeAll(keepingCapacity: true)
            var total = 0.0
            if first < end {
                for k in first..<end {
                    let w = Self.kernel((Double(k) - centre + 0.5) / stretch)
                    taps.append(w)
                    total += w
                }
            }
            if taps.isEmpty || abs(total) < 1e-12 {
                // No usable tap (a centre at the very edge): the nearest source pixel.
                first = min(max(Int(centre.rounded(.down)), 0), sourceLength - 1)
                end = first + 1
                taps = [1]
                total = 1
            }
            // Trim zero weights at both ends (the kernel's zero crossings at the support's edge).
            var lo = 0, hi = taps.count
            while hi - lo > 1, taps[lo] == 0 { lo += 1 }
            while hi - lo > 1, taps[hi - 1] == 0 { hi -= 1 }
            starts.append(first + lo)
            counts.append(hi - lo)
            offsets.append(weights.count)
            for k in lo..<hi { weights.append(Float(taps[k] / total)) }
            lowest = min(lowest, first + lo)
            highest = max(highest, first + hi - 1)
            widest = max(widest, hi - lo)
        }
        self.widest = widest
        usedRange = lowest...highest
    }

    /// The last source index output `i` needs.
    func lastSource(_ i: Int) -> Int { starts[i] + counts[i] - 1 }

    /// Filters one row of `SIMD4<Float>` pixels into `out` (one pixel per output index).
    func apply(_ row: UnsafeBufferPointer<SIMD4<Float>>, into out: UnsafeMutableBufferPointer<SIMD4<Float>>) {
        weights.withUnsafeBufferPointer { w in
            starts.withUnsafeBufferPointer { starts in
                counts.withUnsafeBufferPointer { counts in
                    offsets.withUnsafeBufferPointer { offsets in
                        for i in 0..<starts.count {
                            var sum = SIMD4<Float>()
                            let p = starts[i], base = offsets[i]
                            for k in 0..<counts[i] { sum += row[p + k] * w[base + k] }
                            out[i] = sum
                        }
                    }
                }
            }
        }
    }
}

/// Lanczos-3 rows: each needed source row is converted to floats (and, for a large reduction,
/// first box-averaged by an integer factor in both directions), filtered horizontally into a
/// ring as tall as the vertical kernel, and each output row is made from the ring once its last
/// source row has arrived.
final class LanczosRows: RowFiltering {
    /// The residual reduction the Lanczos step keeps at least (libvips's `gap`): the integer box
    /// factor is `⌊scale / 2⌋`, so Lanczos reduces by 2–4×.
    static let gap = 2.0

    private let sourceSize: PixelSize
    private let outputSize: PixelSize
    /// Integer box factors (1: none) and the reduced grid's size.
    private let boxX: Int, boxY: Int
    private let reducedWidth: Int, reducedHeight: Int
    private let horizontal: LanczosTable
    private let vertical: LanczosTable
    private var output: Bitmap
    private var nextSourceRow = 0
    /// The source row as floats, box-reduced horizontally (reducedWidth pixels).
    private var line: [SIMD4<Float>]
    /// Sum of the current band of `boxY` source rows (box reduction only).
    private var band: [SIMD4<Float>]
    private var bandRows = 0
    /// Ring of horizontally filtered reduced rows, `vertical.widest` rows of `outputSize.width`.
    private var ring: [SIMD4<Float>]
    /// Which reduced row each ring slot holds (-1: none).
    private var slotRow: [Int]
    private var firstOpenRow = 0
    private var sum: [SIMD4<Float>]

    init(sourceSize: PixelSize, crop: PixelRect, outputSize: PixelSize) {
        self.sourceSize = sourceSize
        self.outputSize = outputSize
        let scaleX = crop.width / Double(outputSize.width), scaleY = crop.height / Double(outputSize.height)
        boxX = max(1, min(sourceSize.width, Int((scaleX / Self.gap).rounded(.down))))
        boxY = max(1, min(sourceSize.height, Int((scaleY / Self.gap).rounded(.down))))
        reducedWidth = (sourceSize.width + boxX - 1) / boxX
        reducedHeight = (sourceSize.height + boxY - 1) / boxY
        horizontal = LanczosTable(sourceLength: reducedWidth, start: crop.x / Double(boxX), span: crop.width / Double(boxX),
                                  outputLength: outputSize.width)
        vertical = LanczosTable(sourceLength: reducedHeight, start: crop.y / Double(boxY), span: crop.height / Double(boxY),
                                outputLength: outputSize.height)
        output = Bitmap(zeroed: outputSize)
        line = [SIMD4<Float>](repeating: .zero, count: reducedWidth)
        band = boxY > 1 ? [SIMD4<Float>](repeating: .zero, count: reducedWidth) : []
        ring = [SIMD4<Float>](repeating: .zero, count: vertical.widest * outputSize.width)
        slotRow = [Int](repeating: -1, count: vertical.widest)
        sum = [SIMD4<Float>](repeating: .zero, count: outputSize.width)
    }

    var nextRowIsNeeded: Bool {
        nextSourceRow < sourceSize.height && vertical.usedRange.contains(nextSourceRow / boxY)
    }

    func push(row: UnsafeBufferPointer<UInt8>) {
        let r = nextSourceRow
        precondition(r < sourceSize.height, "more rows pushed than the source height")
        nextSourceRow += 1
        let reduced = r / boxY
        guard vertical.usedRange.contains(reduced) else {
            finishRows(through: reduced)
            return
        }
        convert(row)
        if boxY == 1 {
            line.withUnsafeBufferPointer { add(reducedRow: reduced, $0) }
            return
        }
        band.withUnsafeMutableBufferPointer { band in
            line.withUnsafeBufferPointer { line in
                if bandRows == 0 {
                    for i in 0..<band.count { band[i] = line[i] }
                } else {
                    for i in 0..<band.count { band[i] += line[i] }
                }
            }
        }
        bandRows += 1
        if bandRows == boxY || r == sourceSize.height - 1 { flushBand() }
    }

    func finish() -> Bitmap {
        if bandRows > 0 { flushBand() }
        finishRows(through: Int.max)
        return output
    }

    /// The source row as floats in ``line``, each pixel the mean of its `boxX` columns.
    private func convert(_ row: UnsafeBufferPointer<UInt8>) {
        let width = sourceSize.width, box = boxX
        line.withUnsafeMutableBufferPointer { line in
            if box == 1 {
                for x in 0..<width {
                    let p = x * 4
                    line[x] = SIMD4<Float>(Float(row[p]), Float(row[p + 1]), Float(row[p + 2]), Float(row[p + 3]))
                }
                return
            }
            for j in 0..<line.count {
                let x0 = j * box, x1 = min(width, x0 + box)
                var s = SIMD4<UInt32>()
                for x in x0..<x1 {
                    let p = x * 4
                    s &+= SIMD4<UInt32>(UInt32(row[p]), UInt32(row[p + 1]), UInt32(row[p + 2]), UInt32(row[p + 3]))
                }
                line[j] = SIMD4<Float>(s) / Float(x1 - x0)
            }
        }
    }

    /// The mean of the band's rows becomes the next reduced row.
    private func flushBand() {
        let reduced = (nextSourceRow - 1) / boxY, count = Float(bandRows)
        bandRows = 0
        band.withUnsafeMutableBufferPointer { band in
            for i in 0..<band.count { band[i] /= count }
            add(reducedRow: reduced, UnsafeBufferPointer(band))
        }
    }

    /// Filters reduced row `r` horizontally into the ring and writes every output row it completes.
    private func add(reducedRow r: Int, _ pixels: UnsafeBufferPointer<SIMD4<Float>>) {
        let slot = r % slotRow.count, width = outputSize.width
        ring.withUnsafeMutableBufferPointer { ring in
            guard let base = ring.baseAddress else { return }
            horizontal.apply(pixels, into: UnsafeMutableBufferPointer(start: base + slot * width, count: width))
        }
        slotRow[slot] = r
        finishRows(through: r)
    }

    /// Writes out every output row whose last reduced row is at or before `r`; rows never
    /// pushed (a truncated source) count as transparent.
    private func finishRows(through r: Int) {
        let width = outputSize.width, slots = slotRow.count
        while firstOpenRow < outputSize.height, vertical.lastSource(firstOpenRow) <= r {
            let y = firstOpenRow
            firstOpenRow += 1
            let first = vertical.starts[y], count = vertical.counts[y], base = vertical.offsets[y]
            var reached = false
            sum.withUnsafeMutableBufferPointer { sum in
                ring.withUnsafeBufferPointer { ring in
                    vertical.weights.withUnsafeBufferPointer { w in
                        for k in 0..<count {
                            let s = first + k, slot = s % slots
                            guard slotRow[slot] == s else { continue }
                            let weight = w[base + k], offset = slot * width
                            if !reached {
                                for i in 0..<width { sum[i] = ring[offset + i] * weight }
                                reached = true
                            } else {
                                for i in 0..<width { sum[i] += ring[offset + i] * weight }
                            }
                        }
                    }
                }
                guard reached else { return }
                let rowOffset = y * output.bytesPerRow
                output.withUnsafeMutableBytes { out in
                    for i in 0..<width {
                        // Round and clamp; colour never above alpha (ringing at an alpha edge).
                        let v = (sum[i] + 0.5).clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                        let a = v[3].rounded(.down)
                        let p = rowOffset + i * 4
                        out[p] = UInt8(min(v[0], a))
                        out[p + 1] = UInt8(min(v[1], a))
                        out[p + 2] = UInt8(min(v[2], a))
                        out[p + 3] = UInt8(a)
                    }
                }
            }
        }
    }
}
