/// A codec's interleaved 8-bit RGB or RGBA plane (libheif's decoded image, libjxl's output
/// buffer), read one row at a time as RGBA8, premultiplied on the way with ``premultiply``.
///
/// A decoder that has the whole plane in its own buffer uses it to reach the target size
/// without a full-size RGBA bitmap: ``resampled(to:filter:)`` pushes the rows through a
/// ``RowResampler`` (the same arithmetic as ``Resampler/resample(_:crop:to:filter:)`` on the
/// plane as a bitmap, so the bytes are the same), converting only the rows it needs.
public struct PlaneRows {
    /// The first byte of the first row; valid while the plane lives.
    public let plane: UnsafePointer<UInt8>
    /// Bytes from one row to the next (at least `size.width × channels`).
    public let stride: Int
    /// The plane's size in pixels.
    public let size: PixelSize
    /// 3 (RGB, opaque) or 4 (RGBA).
    public let channels: Int
    /// Whether the plane's alpha is straight and must be multiplied in.
    public let premultiply: Bool

    public init(plane: UnsafePointer<UInt8>, stride: Int, size: PixelSize, channels: Int, premultiply: Bool) {
        precondition(channels == 3 || channels == 4, "a plane has 3 or 4 channels")
        precondition(stride >= size.width * channels, "the stride is shorter than a row")
        self.plane = plane
        self.stride = stride
        self.size = size
        self.channels = channels
        self.premultiply = premultiply
    }

    /// Row `y` as RGBA8 into `out` (`size.width × 4` bytes), premultiplied with ``premultiply``.
    public func row(_ y: Int, into out: UnsafeMutableBufferPointer<UInt8>) {
        guard let target = out.baseAddress else { return }
        let source = plane + y * stride
        if channels == 4 {
            target.update(from: source, count: size.width * 4)
            if premultiply { Bitmap.premultiply(UnsafeMutableBufferPointer(start: target, count: size.width * 4)) }
        } else {
            for x in 0..<size.width {
                target[x * 4] = source[x * 3]
                target[x * 4 + 1] = source[x * 3 + 1]
                target[x * 4 + 2] = source[x * 3 + 2]
                target[x * 4 + 3] = 255
            }
        }
    }

    /// The whole plane as a bitmap of its size, labelled `format`.
    public func bitmap(format: PixelFormat) -> Bitmap {
        var bitmap = Bitmap(zeroed: size, pixelFormat: format)
        let bytesPerRow = bitmap.bytesPerRow
        bitmap.withUnsafeMutableBytes { pixels in
            for y in 0..<size.height {
                row(y, into: UnsafeMutableBufferPointer(rebasing: pixels[(y * bytesPerRow)..<(y * bytesPerRow + size.width * 4)]))
            }
        }
        return bitmap
    }

    /// The plane resampled to `output` (premultiplied RGBA8), one row at a time: rows the
    /// resampler does not need are not converted.
    public func resampled(to output: PixelSize, filter: ResamplingFilter) -> Bitmap {
        var resampler = RowResampler(sourceSize: size, outputSize: output, filter: filter)
        var scratch = [UInt8](repeating: 0, count: size.width * 4)
        scratch.withUnsafeMutableBufferPointer { buffer in
            for y in 0..<size.height {
                if resampler.nextRowIsNeeded { row(y, into: buffer) }
                resampler.push(row: UnsafeBufferPointer(buffer))
            }
        }
        return resampler.finish()
    }
}
