#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Trim {
    /// The part of `bitmap` (upright, either pixel format) inside its uniform border, as
    /// libvips 8.14's `find_trim` computes it (`libvips/arithmetic/find_trim.c`): flatten onto
    /// the background, 3 × 3 median per channel (edges copied outwards, as `vips_rank` extends
    /// them), `|median − background| > threshold` on any channel marks the subject, and the box
    /// is the first marked column and row from each side. `nil` when there is nothing to cut:
    /// no border, or no subject at all (libvips then returns an empty box).
    ///
    /// No median is sorted: a median of nine is above `background + threshold` exactly when
    /// five of the nine are, and below `background − threshold` when five are below, so each
    /// pixel is classed once (a table per channel; ``SubjectRows``) and the 3 × 3 windows only
    /// count classes. Rows are scanned from the top and from the bottom (the border's area),
    /// then, between them, each row only up to the leftmost and from the rightmost subject
    /// found so far; a row whose three rows hold no marked pixel is skipped whole. A uniform
    /// 100 MP picture costs one pass that reads each pixel once.
    func box(in bitmap: Bitmap) -> PixelRect? {
        let w = bitmap.width, h = bitmap.height
        guard w > 0, h > 0 else { return nil }
        let corner = bitmap.pixel(x: 0, y: 0)
        // The border colour as an opaque one, as the top-left pixel straight when none was given.
        var straight = [corner.r, corner.g, corner.b, corner.a]
        if bitmap.pixelFormat.isPremultiplied && corner.a > 0 {
            straight.withUnsafeMutableBufferPointer { _ = Bitmap.unpremultiply(UnsafeBufferPointer($0), into: $0) }
        }
        let backdrop = background ?? RGBAColor(red: straight[0], green: straight[1], blue: straight[2])
        return bitmap.withUnsafeBytes { bytes -> PixelRect? in
            var rows = SubjectRows(bitmap: bitmap, bytes: bytes, backdrop: backdrop, threshold: threshold)
            defer { rows.deallocate() }
            guard let top = (0..<h).first(where: { rows.first(in: $0, 0..<w) != nil }) else { return nil }
            let bottom = ((top..<h).reversed().first(where: { rows.first(in: $0, 0..<w) != nil }) ?? top) + 1
            var left = w, right = -1
            for y in top..<bottom {
                if let x = rows.first(in: y, 0..<left) { left = x }
                if let x = rows.last(in: y, max(left, right + 1)..<w) { right = x }
            }
            right = max(right, left)
            let box = PixelRect(x: Double(left), y: Double(top), width: Double(right + 1 - left), height: Double(bottom - top))
            return box == PixelRect(bitmap.size) ? nil : box
        }
    }

    /// The pixels of a picture classed against the border, row by row (three rows kept, as a
    /// 3 × 3 window needs): for each channel of a pixel flattened onto the backdrop, whether it
    /// lies above `backdrop + threshold` (a 1 in the channel's low nibble) or below
    /// `backdrop − threshold` (its high nibble). Summed over a window, a nibble of 5 or more is
    /// a median past the threshold on that side.
    struct SubjectRows {
        private let bytes: UnsafeBufferPointer<UInt8>
        private let width: Int, height: Int, bytesPerRow: Int
        private let premultiplied: Bool
        private let backdrop: [Double]
        /// Each channel's 256 values classed: `classes[c * 256 + v]`.
        private let classes: [UInt32]
        /// Three rows of classes, `width` each, and which row each holds (−1: none yet) and
        /// whether any of its pixels is classed.
        private let slots: UnsafeMutablePointer<UInt32>
        private var held: [(row: Int, marked: Bool)] = [(-1, false), (-1, false), (-1, false)]

        init(bitmap: Bitmap, bytes: UnsafeBufferPointer<UInt8>, backdrop: RGBAColor, threshold: Double) {
            self.bytes = bytes
            (width, height, bytesPerRow) = (bitmap.width, bitmap.height, bitmap.bytesPerRow)
            premultiplied = bitmap.pixelFormat.isPremultiplied
            let bg = [Double(backdrop.red), Double(backdrop.green), Double(backdrop.blue)]
            self.backdrop = bg
            var classes = [UInt32](repeating: 0, count: 3 * 256)
            for c in 0..<3 {
                for v in 0..<256 {
                    // The same comparison as `|median − background| > threshold`, split by side.
                    let difference = Double(v) - bg[c]
                    if difference > threshold { classes[c * 256 + v] |= 1 << (8 * c) }
                    if -difference > threshold { classes[c * 256 + v] |= 1 << (8 * c + 4) }
                }
            }
            self.classes = classes
            slots = .allocate(capacity: 3 * max(1, bitmap.width))
        }

        func deallocate() { slots.deallocate() }

        /// The first subject pixel of row `y` within `columns`, or `nil`.
        mutating func first(in y: Int, _ columns: Range<Int>) -> Int? {
            guard let window = window(y) else { return nil }
            return columns.first { Self.isSubject(window, $0, width) }
        }

        /// The last subject pixel of row `y` within `columns`, or `nil`.
        mutating func last(in y: Int, _ columns: Range<Int>) -> Int? {
            guard let window = window(y) else { return nil }
            return columns.reversed().first { Self.isSubject(window, $0, width) }
        }

        /// The classes of rows `y − 1`, `y` and `y + 1` (edges copied outwards), or `nil` when
        /// none of them has a classed pixel (no subject in row `y`).
        private mutating func window(_ y: Int) -> (UnsafePointer<UInt32>, UnsafePointer<UInt32>, UnsafePointer<UInt32>)? {
            let above = classed(max(0, y - 1)), row = classed(y), below = classed(min(height - 1, y + 1))
            guard above.marked || row.marked || below.marked else { return nil }
            return (above.pixels, row.pixels, below.pixels)
        }

        private static func isSubject(_ rows: (UnsafePointer<UInt32>, UnsafePointer<UInt32>, UnsafePointer<UInt32>),
                                      _ x: Int, _ width: Int) -> Bool {
            func column(_ x: Int) -> UInt32 { rows.0[x] &+ rows.1[x] &+ rows.2[x] }
            let sum = column(max(0, x - 1)) &+ column(x) &+ column(min(width - 1, x + 1))
            // Nibbles of at most 9: adding 3 carries into a nibble's top bit from 5 on.
            return (sum &+ 0x33_3333) & 0x88_8888 != 0
        }

        /// Row `y` classed, from the three held rows or into the one held longest.
        private mutating func classed(_ y: Int) -> (pixels: UnsafePointer<UInt32>, marked: Bool) {
            if let slot = held.firstIndex(where: { $0.row == y }) {
                return (UnsafePointer(slots + slot * width), held[slot].marked)
            }
            // The slot farthest from `y`: the scans move one row at a time.
            let slot = held.indices.max { abs(held[$0].row - y) < abs(held[$1].row - y) } ?? 0
            let out = slots + slot * width
            var any: UInt32 = 0
            let start = y * bytesPerRow
            classes.withUnsafeBufferPointer { table in
                for x in 0..<width {
                    let o = start + x * 4
                    let a = bytes[o + 3]
                    let mark: UInt32
                    if a == 255 {
                        mark = table[Int(bytes[o])] | table[256 + Int(bytes[o + 1])] | table[512 + Int(bytes[o + 2])]
                    } else {
                        mark = table[Int(flat(o, 0, a))] | table[256 + Int(flat(o, 1, a))] | table[512 + Int(flat(o, 2, a))]
                    }
                    out[x] = mark
                    any |= mark
                }
            }
            held[slot] = (y, any != 0)
            return (UnsafePointer(out), any != 0)
        }

        /// Channel `c` of the pixel at byte `o` (alpha `a` < 255) flattened onto the backdrop;
        /// an opaque pixel is its own bytes.
        private func flat(_ o: Int, _ c: Int, _ a: UInt8) -> UInt8 {
            let alpha = Double(a)
            let colour = premultiplied ? Double(bytes[o + c]) : Double(bytes[o + c]) * alpha / 255
            return UInt8(min(255, (colour + backdrop[c] * (255 - alpha) / 255).rounded()))
        }
    }
}
