/// Where a response's pixels came from.
public enum ImageSource: String, Hashable, Sendable {
    /// The memory cache: no loading, no decoding.
    case memory
    /// The disk cache, without asking the origin.
    case disk
    /// The disk cache, after the origin confirmed it is current (HTTP 304).
    case revalidated
    /// A loader (network or file).
    case network
}

/// A decoded picture at the requested size, and how it was obtained.
public struct ImageResponse: Sendable {
    /// The pixels, exactly the planned output size, in the request's
    /// ``ProcessingOptions/pixelFormat`` (premultiplied unless straight was asked).
    public var bitmap: Bitmap
    /// Where it came from.
    public var source: ImageSource
    /// The picture's own size, upright (unless orientation was turned off).
    public var originalSize: PixelSize
    /// The container format of the compressed bytes.
    public var format: ImageFormat
    /// The codec's warnings about corrupt-but-decodable data.
    public var warnings: [String]

    /// Creates a response.
    public init(bitmap: Bitmap, source: ImageSource, originalSize: PixelSize, format: ImageFormat, warnings: [String] = []) {
        self.bitmap = bitmap
        self.source = source
        self.originalSize = originalSize
        self.format = format
        self.warnings = warnings
    }
}
