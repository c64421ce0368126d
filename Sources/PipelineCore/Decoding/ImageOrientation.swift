/// The eight EXIF orientations: how the stored pixels must be turned to be upright.
public enum ImageOrientation: Int, Hashable, Sendable, CaseIterable {
    /// Stored upright.
    case up = 1
    /// Mirrored left to right.
    case upMirrored = 2
    /// Rotated 180°.
    case down = 3
    /// Mirrored top to bottom.
    case downMirrored = 4
    /// Mirrored along the main diagonal (transposed).
    case leftMirrored = 5
    /// Needs a 90° clockwise turn to be upright.
    case right = 6
    /// Mirrored along the anti-diagonal (transversed).
    case rightMirrored = 7
    /// Needs a 90° counter-clockwise turn to be upright.
    case left = 8

    /// `true` when turning upright swaps width and height (orientations 5–8).
    public var swapsDimensions: Bool { rawValue >= 5 }

    /// The upright size of a stored picture of `size`.
    public func uprightSize(of size: PixelSize) -> PixelSize {
        swapsDimensions ? size.transposed : size
    }
}
