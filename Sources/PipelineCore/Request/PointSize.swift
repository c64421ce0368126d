/// A size in points, the unit a view is laid out in: a screen shows `scale` pixels per point
/// (1, 2 or 3), so a 160 × 160 pt cell at @2x needs 320 × 320 pixels. Requests and keys speak
/// pixels only; ``PixelSize/init(_:scale:)`` converts (``ImageRequest/init(url:size:scale:contentMode:priority:decoding:processors:)``,
/// ``TargetSize/points(_:scale:)``).
public struct PointSize: Hashable, Sendable, CustomStringConvertible {
    /// Width in points.
    public var width: Double
    /// Height in points.
    public var height: Double

    /// Creates a size of `width` × `height` points.
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// `"160×90 pt"`.
    public var description: String { "\(Self.text(width))×\(Self.text(height)) pt" }

    private static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}

extension PixelSize {
    /// The pixels `points` cover on a screen of `scale` pixels per point: each side is
    /// `points × scale` rounded up to a whole pixel, so the picture is never smaller than the
    /// view (100.5 pt at @2x is 201 px, 33.4 pt at @3x is 101 px). A product within a millionth
    /// of a pixel of a whole number counts as that number, so floating-point noise never adds a
    /// pixel (110 pt at 1.1 is 121 px, not 122).
    ///
    /// A side that is not a positive finite number (a negative, zero or NaN width, a zero
    /// scale) becomes 0, an invalid size that the pipeline rejects as it does any; one beyond
    /// `Int32.max` pixels is clamped to it.
    public init(_ points: PointSize, scale: Double) {
        self.init(width: Self.pixels(points.width, scale: scale), height: Self.pixels(points.height, scale: scale))
    }

    private static func pixels(_ points: Double, scale: Double) -> Int {
        let exact = points * scale
        guard exact > 0 else { return 0 }  // NaN, negative infinity, zero and below
        let nearest = exact.rounded()
        let whole = abs(exact - nearest) <= 1e-6 ? nearest : exact.rounded(.up)
        return whole >= Double(Int32.max) ? Int(Int32.max) : Int(whole)
    }
}
