/// The layout of a ``Bitmap``'s pixels.
///
/// Both formats are 8-bit RGBA and agree on every opaque pixel (alpha 255) and on transparent
/// black; they differ where alpha is between 0 and 255. Premultiplied is what compositing and
/// filtering want (averaging across an edge gives no dark fringes); straight is what files
/// store (PNG, WebP, HEIF, GIF), so a full-size straight decode written back is exact, while
/// premultiplying keeps only `alpha + 1` levels of each colour channel.
public enum PixelFormat: Hashable, Sendable {
    /// Four 8-bit channels, red, green, blue, alpha, with colour premultiplied by alpha
    /// (`c = round(straight × a / 255)`). The default for display.
    case rgba8Premultiplied
    /// Four 8-bit channels, red, green, blue, alpha, with colour not multiplied by alpha
    /// (straight, or "unassociated", alpha): the values a file stores. For writing and for
    /// comparing with reference decoders.
    case rgba8Straight

    /// Bytes per pixel: 4.
    public var bytesPerPixel: Int { 4 }

    /// Whether colour is multiplied by alpha.
    public var isPremultiplied: Bool { self == .rgba8Premultiplied }
}

/// A decoded picture in memory: RGBA8, rows top to bottom, with premultiplied or straight alpha
/// as ``pixelFormat`` says (``premultiplied()`` and ``straightened()`` convert).
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
    public private(set) var pixelFormat: PixelFormat
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

    /// A transparent black bitmap of `size` with tightly packed rows, in `pixelFormat`
    /// (premultiplied by default; transparent black is the same bytes in both).
    public init(zeroed size: PixelSize, pixelFormat: PixelFormat = .rgba8Premultiplied) {
        precondition(size.isValid, "Bitmap size must be positive: \(size)")
        width = size.width
        height = size.height
        self.pixelFormat = pixelFormat
        bytesPerRow = size.width * 4
        bytes = [UInt8](repeating: 0, count: size.width * 4 * size.height)
    }

    /// `width × height`.
    public var size: PixelSize { PixelSize(width: width, height: height) }

    /// Memory the pixels take, in bytes: `bytesPerRow × height`. The pixel part of a pipeline
    /// memory-cache entry's cost (``ImagePipeline/Configuration/memoryCache`` says the rest).
    public var cost: Int { bytesPerRow * height }

    /// The four bytes of the pixel at (`x`, `y`), in the bitmap's ``pixelFormat``.
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

    /// The pixels as straight RGBA8, tightly packed: for encoders and comparisons with
    /// reference decoders. A straight bitmap's bytes come back unchanged (shared, not copied,
    /// when its rows are tightly packed); a premultiplied one's have alpha divided back out
    /// (`c = min(255, round(c × 255 / a))`; a fully transparent pixel is 0, 0, 0, 0).
    public func unpremultipliedBytes() -> [UInt8] {
        let rowBytes = width * 4
        if pixelFormat == .rgba8Straight {
            if bytesPerRow == rowBytes && bytes.count == rowBytes * height { return bytes }
            var out = [UInt8](repeating: 0, count: rowBytes * height)
            out.withUnsafeMutableBufferPointer { target in
                bytes.withUnsafeBufferPointer { source in
                    guard let to = target.baseAddress, let from = source.baseAddress else { return }
                    for y in 0..<height { (to + y * rowBytes).update(from: from + y * bytesPerRow, count: rowBytes) }
                }
            }
            return out
        }
        var out = [UInt8](repeating: 0, count: rowBytes * height)
        out.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                for y in 0..<height {
                    let row = UnsafeBufferPointer(rebasing: source[(y * bytesPerRow)..<(y * bytesPerRow + rowBytes)])
                    Bitmap.unpremultiply(row, into: UnsafeMutableBufferPointer(rebasing: target[(y * rowBytes)..<((y + 1) * rowBytes)]))
                }
            }
        }
        return out
    }

    /// This bitmap with premultiplied alpha: itself when it already is; else colour multiplied
    /// by alpha (``premultiply(_:)``). A bitmap whose pixels are all opaque (or transparent
    /// black) is only relabelled, its bytes shared, after one read-only pass.
    public func premultiplied() -> Bitmap { converted(to: .rgba8Premultiplied) }

    /// This bitmap with straight alpha: itself when it already is; else alpha divided back
    /// out as ``unpremultipliedBytes()`` does. A bitmap whose pixels are all opaque (or
    /// transparent black) is only relabelled, its bytes shared, after one read-only pass.
    ///
    /// Straightening cannot restore the colour precision premultiplying lost: decode straight
    /// (``DecodeOptions/pixelFormat``) when the exact stored values matter.
    public func straightened() -> Bitmap { converted(to: .rgba8Straight) }

    /// This bitmap in `format` (see ``premultiplied()`` and ``straightened()``).
    public func converted(to format: PixelFormat) -> Bitmap {
        guard format != pixelFormat else { return self }
        var out = self
        out.pixelFormat = format
        // Pixels the two formats agree on: opaque, and transparent black. Find the first row
        // with another; when there is none, the bytes are shared as they are.
        let rowBytes = width * 4
        let firstRow: Int? = bytes.withUnsafeBufferPointer { source in
            for y in 0..<height {
                var i = y * bytesPerRow + 3
                let end = i + rowBytes
                while i < end {
                    let a = source[i]
                    if a != 255 && (a != 0 || source[i - 3] | source[i - 2] | source[i - 1] != 0) { return y }
                    i += 4
                }
            }
            return nil
        }
        guard let firstRow else { return out }
        let premultiplying = format == .rgba8Premultiplied
        let stride = bytesPerRow
        out.bytes.withUnsafeMutableBufferPointer { pixels in
            for y in firstRow..<height {
                let row = UnsafeMutableBufferPointer(rebasing: pixels[(y * stride)..<(y * stride + rowBytes)])
                if premultiplying {
                    Bitmap.premultiply(row)
                } else {
                    Bitmap.unpremultiply(UnsafeBufferPointer(row), into: row)
                }
            }
        }
        return out
    }

    /// Divides alpha out of premultiplied RGBA8 `row` into `out` (same length; may be the same
    /// memory): `c = min(255, round(c × 255 / a))`, and 0, 0, 0, 0 where alpha is 0. Returns
    /// whether any pixel had alpha below 255. The one unpremultiply: encoders, imgpipe's PAM
    /// writer, colour conversion and trimming all divide alpha out here.
    @discardableResult
    public static func unpremultiply(_ row: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        var i = 0
        var translucent = false
        let count = min(row.count, out.count)
        while i + 3 < count {
            let a = Int(row[i + 3])
            if a == 255 {  // opaque: the colour is already straight (most pixels)
                out[i] = row[i]; out[i + 1] = row[i + 1]; out[i + 2] = row[i + 2]
            } else if a == 0 {
                translucent = true
                out[i] = 0; out[i + 1] = 0; out[i + 2] = 0
            } else {
                let half = a / 2
                out[i] = UInt8(min(255, (Int(row[i]) * 255 + half) / a))
                out[i + 1] = UInt8(min(255, (Int(row[i + 1]) * 255 + half) / a))
                out[i + 2] = UInt8(min(255, (Int(row[i + 2]) * 255 + half) / a))
                translucent = true
            }
            out[i + 3] = UInt8(a)
            i += 4
        }
        return translucent
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
