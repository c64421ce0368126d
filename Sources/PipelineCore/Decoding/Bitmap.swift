/// The layout of a ``Bitmap``'s pixels.
public enum PixelFormat: Hashable, Sendable {
    /// Four 8-bit channels, red, green, blue, alpha, with colour premultiplied by alpha.
    case rgba8Premultiplied

    /// Bytes per pixel: 4.
    public var bytesPerPixel: Int { 4 }
}

/// A decoded picture in memory: RGBA8 with premultiplied alpha, rows top to bottom.
///
/// A value type over a copy-on-write array, so it is `Sendable` and cheap to pass around.
public struct Bitmap: Hashable, Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from one row to the next (≥ `width × 4`).
    public let bytesPerRow: Int
    /// The pixel layout.
    public let pixelFormat: PixelFormat
    /// The pixel bytes, `bytesPerRow × height` of them.
    public private(set) var bytes: [UInt8]

    /// Wraps existing bytes; `nil` when `bytes` is too short for the geometry or it is empty.
    public init?(width: Int, height: Int, bytesPerRow: Int, pixelFormat: PixelFormat = .rgba8Premultiplied,
                 bytes: [UInt8]) {
        guard width > 0, height > 0, bytesPerRow >= width * pixelFormat.bytesPerPixel,
              bytes.count >= bytesPerRow * height else { return nil }
        self.width = width
        self.height = height
        self.bytesPerRow = bytesPerRow
        self.pixelFormat = pixelFormat
        self.bytes = bytes
    }

    /// A transparent black bitmap of `size` with tightly packed rows.
    public init(zeroed size: PixelSize) {
        precondition(size.isValid, "Bitmap size must be positive: \(size)")
        width = size.width
        height = size.height
        pixelFormat = .rgba8Premultiplied
        bytesPerRow = size.width * 4
        bytes = [UInt8](repeating: 0, count: size.width * 4 * size.height)
    }

    /// `width × height`.
    public var size: PixelSize { PixelSize(width: width, height: height) }

    /// Memory the pixels take, in bytes: `bytesPerRow × height`. The memory cache's unit.
    public var cost: Int { bytesPerRow * height }

    /// The four premultiplied bytes of the pixel at (`x`, `y`).
    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        let offset = y * bytesPerRow + x * 4
        return (bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3])
    }

    /// Gives mutable access to the pixel bytes.
    public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try bytes.withUnsafeMutableBufferPointer { try body($0) }
    }

    /// Gives read access to the pixel bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try bytes.withUnsafeBufferPointer { try body($0) }
    }

    /// The pixels with alpha divided back out (straight RGBA8), tightly packed: for encoders
    /// and comparisons with reference decoders.
    public func unpremultipliedBytes() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            let row = y * bytesPerRow
            for x in 0..<width {
                let s = row + x * 4, d = (y * width + x) * 4
                let a = Int(bytes[s + 3])
                out[d + 3] = UInt8(a)
                guard a > 0 else { continue }
                for c in 0..<3 {
                    out[d + c] = UInt8(min(255, (Int(bytes[s + c]) * 255 + a / 2) / a))
                }
            }
        }
        return out
    }

    /// Premultiplies straight RGBA8 bytes in place: `c = round(c × a / 255)`.
    public static func premultiply(_ rgba: UnsafeMutableBufferPointer<UInt8>) {
        var i = 0
        while i + 3 < rgba.count {
            let a = UInt32(rgba[i + 3])
            if a != 255 {
                for c in 0..<3 {
                    let t = UInt32(rgba[i + c]) * a + 128
                    rgba[i + c] = UInt8((t + (t >> 8)) >> 8)
                }
            }
            i += 4
        }
    }
}
