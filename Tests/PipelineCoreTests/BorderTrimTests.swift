import Foundation
@testable import PipelineCore
import Testing

/// Issue 41, finding 9: `Trim.box(in:)` counts classes instead of sorting medians (a uniform
/// 100 MP picture took 24–27 s, `vips find_trim` 3.8 s). The box must not move: each case is
/// checked against the definition, a sorted 3 × 3 median per channel (the implementation
/// before, kept here as the reference); `ImgpipeCompositionTests` checks it against libvips.
@Suite("Border trim: the median rule, counted")
struct BorderTrimTests {
    /// The definition, as `find_trim` states it: flatten, 3 × 3 median per channel (edges copied
    /// outwards), `|median − background| > threshold` on any channel, first marked row and
    /// column from each side.
    static func reference(_ trim: Trim, _ bitmap: Bitmap) -> PixelRect? {
        let w = bitmap.width, h = bitmap.height
        let premultiplied = bitmap.pixelFormat.isPremultiplied
        let corner = bitmap.pixel(x: 0, y: 0)
        var straight = [corner.r, corner.g, corner.b, corner.a]
        if premultiplied && corner.a > 0 {
            straight.withUnsafeMutableBufferPointer { _ = Bitmap.unpremultiply(UnsafeBufferPointer($0), into: $0) }
        }
        let backdrop = trim.background ?? RGBAColor(red: straight[0], green: straight[1], blue: straight[2])
        let bg = [Double(backdrop.red), Double(backdrop.green), Double(backdrop.blue)]
        return bitmap.withUnsafeBytes { bytes -> PixelRect? in
            func flat(_ x: Int, _ y: Int, _ c: Int) -> UInt8 {
                let o = min(h - 1, max(0, y)) * bitmap.bytesPerRow + min(w - 1, max(0, x)) * 4
                let a = Double(bytes[o + 3])
                let colour = premultiplied ? Double(bytes[o + c]) : Double(bytes[o + c]) * a / 255
                return UInt8(min(255, (colour + bg[c] * (255 - a) / 255).rounded()))
            }
            func isSubject(_ x: Int, _ y: Int) -> Bool {
                (0..<3).contains { c in
                    let window = (-1...1).flatMap { dy in (-1...1).map { dx in flat(x + dx, y + dy, c) } }.sorted()
                    return abs(Double(window[4]) - bg[c]) > trim.threshold
                }
            }
            var (left, top, right, bottom) = (w, h, -1, -1)
            for y in 0..<h {
                for x in 0..<w where isSubject(x, y) {
                    (left, top, right, bottom) = (min(left, x), min(top, y), max(right, x), max(bottom, y))
                }
            }
            guard right >= 0 else { return nil }
            let box = PixelRect(x: Double(left), y: Double(top), width: Double(right + 1 - left), height: Double(bottom + 1 - top))
            return box == PixelRect(bitmap.size) ? nil : box
        }
    }

    /// A `width × height` picture of `fill`, with `paint` setting some of its pixels.
    static func picture(_ width: Int, _ height: Int, _ format: PixelFormat = .rgba8Straight, fill: [UInt8] = [255, 255, 255, 255],
                        paint: (Int, Int) -> [UInt8]? = { _, _ in nil }) -> Bitmap {
        var bitmap = Bitmap(zeroed: PixelSize(width: width, height: height), pixelFormat: format)
        let row = bitmap.bytesPerRow
        bitmap.withUnsafeMutableBytes { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    let value = paint(x, y) ?? fill
                    for c in 0..<4 { bytes[y * row + x * 4 + c] = value[c] }
                }
            }
        }
        return bitmap
    }

    static let cases: [(String, Bitmap)] = [
        ("uniform", picture(40, 30)),
        ("1×1", picture(1, 1)),
        ("a single pixel (the median removes it)", picture(40, 30) { x, y in x == 20 && y == 10 ? [0, 0, 0, 255] : nil }),
        ("a 2×2 speck (four of nine: removed)", picture(40, 30) { x, y in (20...21).contains(x) && (10...11).contains(y) ? [0, 0, 0, 255] : nil }),
        ("a 3×3 block", picture(40, 30) { x, y in (20...22).contains(x) && (10...12).contains(y) ? [0, 0, 0, 255] : nil }),
        ("border only: a picture that is all border but for noise under the threshold",
         picture(33, 17) { x, y in [UInt8(250 + (x * y) % 6), 255, 250, 255] }),
        ("a subject touching the right and bottom edges",
         picture(25, 19) { x, y in x >= 10 && y >= 7 ? [10, 200, 30, 255] : nil }),
        ("a 1×N column", picture(1, 50) { _, y in (20...30).contains(y) ? [0, 0, 0, 255] : nil }),
        ("an N×1 row", picture(50, 1) { x, _ in (5...9).contains(x) ? [0, 0, 0, 255] : nil }),
        ("a different top-left pixel (the background)", picture(20, 20) { x, y in x == 0 && y == 0 ? [0, 0, 0, 255] : nil }),
        ("one channel just past the threshold", picture(30, 30) { x, y in (8...20).contains(x) && (9...12).contains(y) ? [255, 244, 255, 255] : nil }),
        ("one channel at the threshold", picture(30, 30) { x, y in (8...20).contains(x) && (9...12).contains(y) ? [255, 245, 255, 255] : nil }),
        ("darker and lighter on two channels", picture(30, 30, fill: [128, 128, 128, 255]) { x, y in
            (3...6).contains(x) && (3...27).contains(y) ? [200, 60, 128, 255] : nil }),
        ("translucent, straight", picture(30, 20, fill: [0, 0, 0, 0]) { x, y in
            (5...25).contains(x) && (4...15).contains(y) ? [200, 10, 90, UInt8((x * 13 + y * 7) % 256)] : nil }),
        ("translucent, premultiplied", picture(30, 20, .rgba8Premultiplied, fill: [0, 0, 0, 0]) { x, y in
            let a = (x * 13 + y * 7) % 256
            return (5...25).contains(x) && (4...15).contains(y) ? [UInt8(a * 3 / 4), UInt8(a / 5), UInt8(a / 2), UInt8(a)] : nil }),
        ("scattered noise", picture(37, 29) { x, y in
            let v = (x * 7919 + y * 104_729) % 97
            return v < 30 ? [UInt8(v * 8), UInt8(255 - v * 3), UInt8(v * 5), 255] : nil }),
    ]

    @Test(arguments: cases.indices)
    func boxIsTheMedianRulesBox(_ index: Int) {
        let (name, bitmap) = Self.cases[index]
        for trim in [Trim(), Trim(threshold: 0), Trim(threshold: 40), Trim(background: .white), Trim(background: RGBAColor(red: 0, green: 0, blue: 0))] {
            #expect(trim.box(in: bitmap) == Self.reference(trim, bitmap), "\(name), \(trim)")
        }
    }

    /// The cases above whose answer is known without the reference.
    @Test func knownBoxes() {
        #expect(Trim().box(in: Self.picture(40, 30)) == nil)
        #expect(Trim().box(in: Self.cases[2].1) == nil)
        #expect(Trim().box(in: Self.cases[4].1) == PixelRect(x: 20, y: 10, width: 3, height: 3))
        #expect(Trim().box(in: Self.cases[6].1) == PixelRect(x: 10, y: 7, width: 15, height: 12))
    }
}
