/// Helpers for encoders that hand libraries tightly packed straight RGBA8
/// (``Bitmap/unpremultipliedBytes()``): one place for the checks the WebP, HEIF and JPEG XL
/// encoders all make before choosing RGB or RGBA input.
public enum StraightRGBA {
    /// Whether every alpha byte of `rgba` is 255.
    public static func isOpaque(_ rgba: [UInt8]) -> Bool {
        var index = 3
        while index < rgba.count {
            if rgba[index] != 255 { return false }
            index += 4
        }
        return true
    }

    /// `rgba` without its alpha bytes: RGB, tightly packed.
    public static func droppingAlpha(_ rgba: [UInt8]) -> [UInt8] {
        let pixels = rgba.count / 4
        return [UInt8](unsafeUninitializedCapacity: pixels * 3) { out, count in
            for pixel in 0..<pixels {
                out[pixel * 3] = rgba[pixel * 4]
                out[pixel * 3 + 1] = rgba[pixel * 4 + 1]
                out[pixel * 3 + 2] = rgba[pixel * 4 + 2]
            }
            count = pixels * 3
        }
    }
}
