import CJPEGTestEncoder
import Foundation
import PipelineCore
import PipelineTestSupport

/// Pictures made by the tests themselves, and ways to compare decoded pixels.
enum Fixtures {
    /// Colour layouts ``jpeg(width:height:kind:)`` can write.
    enum Kind: Int32 {
        case gray = 1, rgb = 3, cmyk = 4, ycck = 5
    }

    /// A smooth RGB test pattern: red rises left to right, green top to bottom, blue diagonal.
    static func rgbPattern(width: Int, height: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                pixels[i] = UInt8(x * 255 / max(1, width - 1))
                pixels[i + 1] = UInt8(y * 255 / max(1, height - 1))
                pixels[i + 2] = UInt8((x + y) * 255 / max(1, width + height - 2))
            }
        }
        return pixels
    }

    /// A JPEG of the pattern in `kind` (CMYK/YCCK Adobe-inverted, so that decoding to RGB gives
    /// the pattern back), written by libjpeg with the given options.
    static func jpeg(width: Int, height: Int, kind: Kind = .rgb, quality: Int = 95, progressive: Bool = false,
                     arithmetic: Bool = false, restartRows: Int = 0) -> Data? {
        let rgb = rgbPattern(width: width, height: height)
        let pixels: [UInt8]
        switch kind {
        case .rgb: pixels = rgb
        case .gray: pixels = stride(from: 0, to: rgb.count, by: 3).map { rgb[$0 + 1] }
        case .cmyk, .ycck:
            // Inverted CMYK with no black ink: C' = R, M' = G, Y' = B, K' = 255.
            var cmyk = [UInt8](repeating: 255, count: width * height * 4)
            for p in 0..<(width * height) {
                for c in 0..<3 { cmyk[p * 4 + c] = rgb[p * 3 + c] }
            }
            pixels = cmyk
        }
        var out: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let code = pixels.withUnsafeBufferPointer {
            jpegtest_encode($0.baseAddress, Int32(width), Int32(height), kind.rawValue, Int32(quality),
                            progressive ? 1 : 0, arithmetic ? 1 : 0, Int32(restartRows), &out, &size)
        }
        defer { jpegtest_free(out) }
        guard code == 0, let out else { return nil }
        return Data(bytes: out, count: Int(size))
    }

    /// The pattern as a premultiplied RGBA bitmap (gray: the green channel in all three).
    static func patternBitmap(width: Int, height: Int, gray: Bool = false) -> Bitmap {
        let rgb = rgbPattern(width: width, height: height)
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for p in 0..<(width * height) {
            for c in 0..<3 { rgba[p * 4 + c] = gray ? rgb[p * 3 + 1] : rgb[p * 3 + c] }
        }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: rgba) ?? Bitmap(zeroed: PixelSize(width: 1, height: 1))
    }

    /// Mean absolute difference of the colour channels of two same-size bitmaps (255 if sizes differ).
    static func meanDifference(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.size == b.size else { return 255 }
        var total = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
                total += abs(Int(p.r) - Int(q.r)) + abs(Int(p.g) - Int(q.g)) + abs(Int(p.b) - Int(q.b))
            }
        }
        return Double(total) / Double(a.width * a.height * 3)
    }

    /// A binary PPM (P6, maxval 255) as an opaque bitmap.
    static func ppm(_ data: Data) -> Bitmap? {
        let bytes = [UInt8](data)
        var fields: [Int] = []
        var i = 2
        guard bytes.count > 2, bytes[0] == 0x50, bytes[1] == 0x36 else { return nil }
        while fields.count < 3, i < bytes.count {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
            if i < bytes.count, bytes[i] == 0x23 {  // comment
                while i < bytes.count, bytes[i] != 0x0A { i += 1 }
                continue
            }
            var value = 0
            while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { value = value * 10 + Int(bytes[i] - 0x30); i += 1 }
            fields.append(value)
        }
        i += 1  // the single whitespace after maxval
        let (width, height) = (fields[0], fields[1])
        guard fields.count == 3, fields[2] == 255, bytes.count >= i + width * height * 3 else { return nil }
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for p in 0..<(width * height) {
            for c in 0..<3 { rgba[p * 4 + c] = bytes[i + p * 3 + c] }
        }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: rgba)
    }

    /// Decodes the way the pipeline does for a `.fit` request of `box`: at the plan's scaled
    /// size, then resampled to the exact output size.
    static func thumbnail(_ decoder: some ImageDecoding, _ data: Data, box: PixelSize,
                          appliesOrientation: Bool = true) throws -> Bitmap {
        let info = try decoder.readInfo(data)
        let upright = appliesOrientation ? info.uprightSize : info.size
        let plan = ResizePlan(source: upright, target: .pixels(box), contentMode: .fit)
        let decoded = try decoder.decode(data, options: DecodeOptions(targetSize: plan.scaledSize,
                                                                      appliesOrientation: appliesOrientation))
        return Resampler.resample(decoded.bitmap, plan: plan)
    }
}
