/// The eight EXIF orientations: how the stored pixels must be turned to be upright.
///
/// The same eight values name any turn in 90° steps with or without a mirror
/// (``init(quarterTurnsClockwise:flop:flip:)``): ``ProcessingOptions/transform`` is one, applied
/// after the file's own (``followed(by:)``).
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

extension ImageOrientation {
    /// The orientation that turns pixels as `self` does and then as `next` does: the file's
    /// orientation followed by a requested rotation and flips, as one turn applied once.
    ///
    /// The eight orientations are the symmetries of a rectangle (the dihedral group of order
    /// 8); each is a 2 × 2 matrix of 0 and ±1 on pixel coordinates, and this is their product.
    public func followed(by next: ImageOrientation) -> ImageOrientation {
        let a = matrix, b = next.matrix
        let product = (b.0 * a.0 + b.1 * a.2, b.0 * a.1 + b.1 * a.3, b.2 * a.0 + b.3 * a.2, b.2 * a.1 + b.3 * a.3)
        return Self.allCases.first { $0.matrix == product } ?? .up
    }

    /// The orientation that undoes `self`: `o.followed(by: o.inverse) == .up`.
    public var inverse: ImageOrientation {
        Self.allCases.first { followed(by: $0) == .up } ?? .up
    }

    /// `quarterTurns` turns of 90° clockwise (any integer: negative turns are counter-clockwise,
    /// taken modulo 4), then a mirror left to right when `flop` and top to bottom when `flip`
    /// (ImageMagick's `-rotate`, `-flop` and `-flip`, in that order; imgproxy's `rotate`, then
    /// `flip`'s horizontal and vertical).
    public init(quarterTurnsClockwise quarterTurns: Int, flop: Bool = false, flip: Bool = false) {
        let turns: [ImageOrientation] = [.up, .right, .down, .left]
        var result = turns[((quarterTurns % 4) + 4) % 4]
        if flop { result = result.followed(by: .upMirrored) }
        if flip { result = result.followed(by: .downMirrored) }
        self = result
    }

    /// Where a stored pixel goes, as `(x, y) ↦ (m.0·x + m.1·y, m.2·x + m.3·y)` up to an offset
    /// that keeps the picture at the origin (y grows downwards): the table of
    /// `Bitmap.oriented(_:)`.
    private var matrix: (Int, Int, Int, Int) {
        switch self {
        case .up: (1, 0, 0, 1)
        case .upMirrored: (-1, 0, 0, 1)
        case .down: (-1, 0, 0, -1)
        case .downMirrored: (1, 0, 0, -1)
        case .leftMirrored: (0, 1, 1, 0)
        case .right: (0, -1, 1, 0)
        case .rightMirrored: (0, -1, -1, 0)
        case .left: (0, 1, -1, 0)
        }
    }
}
