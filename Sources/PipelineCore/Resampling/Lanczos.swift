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

    /// Filters one row of RGBA float pixels (4 floats each) into `out` (4 floats per output index).
    func apply(_ row: UnsafePointer<Float>, into out: UnsafeMutablePointer<Float>) {
        weights.withUnsafeBufferPointer { w in
            starts.withUnsafeBufferPointer { starts in
                counts.withUnsafeBufferPointer { counts in
                    offsets.withUnsafeBufferPointer { offsets in
                        for i in 0..<starts.count {
                            var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                            var p = row + starts[i] * 4
                            let base = offsets[i]
                            for k in 0..<counts[i] {
                                let weight = w[base + k]
                                r += p[0] * weight
                                g += p[1] * weight
                                b += p[2] * weight
                                a += p[3] * weight
                                p += 4
                            }
                            let o = out + i * 4
                            o[0] = r
                            o[1] = g
                            o[2] = b
                            o[3] = a
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
    /// Integer box factors (1: none) and the reduced grid's width.
    private let boxX: Int, boxY: Int
    private let reducedWidth: Int
    private let horizontal: LanczosTable
    private let vertical: LanczosTable
    private var output: Bitmap
    private var nextSourceRow = 0
    /// The source row as RGBA floats, box-reduced horizontally (`reducedWidth` pixels).
    private var line: [Float]
    /// Sum of the current band of `boxY` source rows (box reduction only).
    private var band: [Float]
    private var bandRows = 0
    /// Ring of horizontally filtered reduced rows: `vertical.widest` rows of `outputSize.width` pixels.
    private var ring: [Float]
    /// Which reduced row each ring slot holds (-1: none).
    private var slotRow: [Int]
    private var firstOpenRow = 0
    private var sum: [Float]

    init(sourceSize: PixelSize, crop: PixelRect, outputSize: PixelSize) {
        self.sourceSize = sourceSize
        self.outputSize = outputSize
        let scaleX = crop.width / Double(outputSize.width), scaleY = crop.height / Double(outputSize.height)
        boxX = max(1, min(sourceSize.width, Int((scaleX / Self.gap).rounded(.down))))
        boxY = max(1, min(sourceSize.height, Int((scaleY / Self.gap).rounded(.down))))
        reducedWidth = (sourceSize.width + boxX - 1) / boxX
        let reducedHeight = (sourceSize.height + boxY - 1) / boxY
        horizontal = LanczosTable(sourceLength: reducedWidth, start: crop.x / Double(boxX), span: crop.width / Double(boxX),
                                  outputLength: outputSize.width)
        vertical = LanczosTable(sourceLength: reducedHeight, start: crop.y / Double(boxY), span: crop.height / Double(boxY),
                                outputLength: outputSize.height)
        output = Bitmap(zeroed: outputSize)
        line = [Float](repeating: 0, count: reducedWidth * 4)
        band = boxY > 1 ? [Float](repeating: 0, count: reducedWidth * 4) : []
        ring = [Float](repeating: 0, count: vertical.widest * outputSize.width * 4)
        slotRow = [Int](repeating: -1, count: vertical.widest)
        sum = [Float](repeating: 0, count: outputSize.width * 4)
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
        let first = bandRows == 0
        band.withUnsafeMutableBufferPointer { band in
            line.withUnsafeBufferPointer { line in
                if first {
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
                for i in 0..<(width * 4) { line[i] = Float(row[i]) }
                return
            }
            for j in 0..<reducedWidth {
                let x0 = j * box, x1 = min(width, x0 + box)
                var r: UInt32 = 0, g: UInt32 = 0, b: UInt32 = 0, a: UInt32 = 0
                var p = x0 * 4
                for _ in x0..<x1 {
                    r &+= UInt32(row[p])
                    g &+= UInt32(row[p + 1])
                    b &+= UInt32(row[p + 2])
                    a &+= UInt32(row[p + 3])
                    p += 4
                }
                let scale = 1 / Float(x1 - x0), q = j * 4
                line[q] = Float(r) * scale
                line[q + 1] = Float(g) * scale
                line[q + 2] = Float(b) * scale
                line[q + 3] = Float(a) * scale
            }
        }
    }

    /// The mean of the band's rows becomes the next reduced row.
    private func flushBand() {
        let reduced = (nextSourceRow - 1) / boxY, scale = 1 / Float(bandRows)
        bandRows = 0
        band.withUnsafeMutableBufferPointer { band in
            for i in 0..<band.count { band[i] *= scale }
            add(reducedRow: reduced, UnsafeBufferPointer(band))
        }
    }

    /// Filters reduced row `r` horizontally into the ring and writes every output row it completes.
    private func add(reducedRow r: Int, _ pixels: UnsafeBufferPointer<Float>) {
        let slot = r % slotRow.count, stride = outputSize.width * 4
        ring.withUnsafeMutableBufferPointer { ring in
            guard let base = ring.baseAddress, let from = pixels.baseAddress else { return }
            horizontal.apply(from, into: base + slot * stride)
        }
        slotRow[slot] = r
        finishRows(through: r)
    }

    /// Writes out every output row whose last reduced row is at or before `r`; rows never
    /// pushed (a truncated source) count as transparent.
    private func finishRows(through r: Int) {
        let stride = outputSize.width * 4, slots = slotRow.count
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
                            let weight = w[base + k], offset = slot * stride
                            if !reached {
                                for i in 0..<stride { sum[i] = ring[offset + i] * weight }
                                reached = true
                            } else {
                                for i in 0..<stride { sum[i] += ring[offset + i] * weight }
                            }
                        }
                    }
                }
                guard reached else { return }
                let rowOffset = y * output.bytesPerRow
                output.withUnsafeMutableBytes { out in
                    for i in Swift.stride(from: 0, to: stride, by: 4) {
                        // Round and clamp to 0…255; colour never above alpha (ringing at an alpha edge).
                        let a = min(255, max(0, sum[i + 3] + 0.5)).rounded(.down)
                        out[rowOffset + i] = UInt8(min(a, max(0, sum[i] + 0.5)))
                        out[rowOffset + i + 1] = UInt8(min(a, max(0, sum[i + 1] + 0.5)))
                        out[rowOffset + i + 2] = UInt8(min(a, max(0, sum[i + 2] + 0.5)))
                        out[rowOffset + i + 3] = UInt8(a)
                    }
                }
            }
        }
    }
}
