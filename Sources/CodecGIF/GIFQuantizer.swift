#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// At most 256 colours for the pixels of one GIF frame, and each pixel's index.
///
/// When the pixels hold no more colours than the palette can, the palette is exactly those
/// colours (a logo, pixel art, or a GIF written back at its own size loses nothing). Otherwise
/// median cut (Heckbert's, as ImageMagick's and giflib's quantisers are) over a histogram of
/// 5 bits a channel: the box with the most pixels is cut at its median along its longest axis
/// until there are enough boxes, and each box's colour is its pixels' mean. Pixels are mapped
/// to the nearest colour, optionally with Floyd–Steinberg error diffusion.
struct GIFQuantizer {
    /// RGB triples, `count` of them.
    private(set) var palette: [UInt8] = []
    var count: Int { palette.count / 3 }

    /// Which pixels of `rgba` (tightly packed, `width` wide) to colour: `isColoured(i)` for
    /// pixel `i`. The palette has at most `maxColours`.
    init(_ rgba: [UInt8], pixels: Int, maxColours: Int, isColoured: (Int) -> Bool) {
        var exact: [UInt32: Int] = [:]
        for i in 0..<pixels where isColoured(i) {
            let key = UInt32(rgba[i * 4]) << 16 | UInt32(rgba[i * 4 + 1]) << 8 | UInt32(rgba[i * 4 + 2])
            if exact[key] == nil {
                guard exact.count < maxColours else { exact.removeAll(); break }
                exact[key] = exact.count
            }
        }
        if !exact.isEmpty || !(0..<pixels).contains(where: isColoured) {
            palette = [UInt8](repeating: 0, count: exact.count * 3)
            for (key, index) in exact {
                palette[index * 3] = UInt8(key >> 16)
                palette[index * 3 + 1] = UInt8(key >> 8 & 0xFF)
                palette[index * 3 + 2] = UInt8(key & 0xFF)
            }
            exactIndex = exact
            return
        }
        palette = Self.medianCut(rgba, pixels: pixels, maxColours: maxColours, isColoured: isColoured)
    }

    /// Exact colours and their indices, when the pixels fit the palette.
    private var exactIndex: [UInt32: Int]?
    /// Whether the palette holds every colour exactly (nothing to dither).
    var isExact: Bool { exactIndex != nil }
    /// Nearest-colour answers by 5-bit-a-channel key (−1: not yet asked).
    private var nearestCache = [Int16](repeating: -1, count: 1 << 15)

    /// The index of the colour nearest (r, g, b).
    mutating func index(_ r: Int, _ g: Int, _ b: Int) -> Int {
        if let exactIndex, let hit = exactIndex[UInt32(r) << 16 | UInt32(g) << 8 | UInt32(b)] { return hit }
        let key = (r >> 3) << 10 | (g >> 3) << 5 | (b >> 3)
        if nearestCache[key] >= 0, exactIndex == nil { return Int(nearestCache[key]) }
        var best = 0, bestDistance = Int.max
        for c in 0..<count {
            let dr = r - Int(palette[c * 3]), dg = g - Int(palette[c * 3 + 1]), db = b - Int(palette[c * 3 + 2])
            let distance = 2 * dr * dr + 4 * dg * dg + 3 * db * db  // a rough weighting of what eyes see
            if distance < bestDistance { bestDistance = distance; best = c }
        }
        if exactIndex == nil { nearestCache[key] = Int16(best) }
        return best
    }

    private static func medianCut(_ rgba: [UInt8], pixels: Int, maxColours: Int, isColoured: (Int) -> Bool) -> [UInt8] {
        // Histogram: count and channel sums per 15-bit bin.
        var counts = [Int](repeating: 0, count: 1 << 15)
        var sums = [Int](repeating: 0, count: 3 << 15)
        for i in 0..<pixels where isColoured(i) {
            let r = Int(rgba[i * 4]), g = Int(rgba[i * 4 + 1]), b = Int(rgba[i * 4 + 2])
            let bin = (r >> 3) << 10 | (g >> 3) << 5 | (b >> 3)
            counts[bin] += 1
            sums[bin * 3] += r; sums[bin * 3 + 1] += g; sums[bin * 3 + 2] += b
        }
        var boxes: [[Int]] = [(0..<(1 << 15)).filter { counts[$0] > 0 }]
        func channel(_ bin: Int, _ axis: Int) -> Int { (bin >> (10 - axis * 5)) & 31 }
        while boxes.count < maxColours {
            // The most populous box that can still be cut.
            guard let (at, _) = boxes.enumerated().filter({ $0.element.count > 1 })
                .map({ ($0.offset, $0.element.reduce(0) { $0 + counts[$1] }) }).max(by: { $0.1 < $1.1 }) else { break }
            let box = boxes[at]
            let ranges = (0..<3).map { axis in (box.map { channel($0, axis) }.min() ?? 0, box.map { channel($0, axis) }.max() ?? 0) }
            let axis = (0..<3).max { ranges[$0].1 - ranges[$0].0 < ranges[$1].1 - ranges[$1].0 } ?? 0
            let sorted = box.sorted { channel($0, axis) < channel($1, axis) }
            let total = sorted.reduce(0) { $0 + counts[$1] }
            var running = 0, cut = 1
            for (i, bin) in sorted.enumerated() {
                running += counts[bin]
                if running * 2 >= total { cut = max(1, min(sorted.count - 1, i + 1)); break }
            }
            boxes[at] = Array(sorted[..<cut])
            boxes.append(Array(sorted[cut...]))
        }
        var palette = [UInt8]()
        for box in boxes {
            let n = max(1, box.reduce(0) { $0 + counts[$1] })
            for c in 0..<3 { palette.append(UInt8(min(255, (box.reduce(0) { $0 + sums[$1 * 3 + c] } + n / 2) / n))) }
        }
        return palette
    }
}
