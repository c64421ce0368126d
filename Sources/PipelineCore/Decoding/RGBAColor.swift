#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A colour as 8-bit red, green, blue and straight (not premultiplied) alpha: a background to
/// pad or flatten onto, a placeholder's average colour, a JPEG's backdrop for transparency.
public struct RGBAColor: Hashable, Sendable, CustomStringConvertible {
    /// Red, 0–255.
    public var red: UInt8
    /// Green, 0–255.
    public var green: UInt8
    /// Blue, 0–255.
    public var blue: UInt8
    /// Alpha, 0 (transparent) – 255 (opaque).
    public var alpha: UInt8

    /// A colour from its channels; opaque unless `alpha` says otherwise.
    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    /// Opaque black.
    public static let black = RGBAColor(red: 0, green: 0, blue: 0)
    /// Opaque white.
    public static let white = RGBAColor(red: 255, green: 255, blue: 255)
    /// Transparent black: nothing.
    public static let clear = RGBAColor(red: 0, green: 0, blue: 0, alpha: 0)

    /// A colour as people type one, as ImageMagick, vips and imgproxy take them: one of CSS's
    /// basic names (`white`, `black`, `red`, `navy`, `gray`, … and `orange`), `transparent`,
    /// `#RGB`, `#RRGGBB` or `#RRGGBBAA` (the `#` optional), or `R,G,B` / `R,G,B,A` (0–255
    /// each). `nil` for anything else.
    public init?(parsing text: String) {
        let lowered = text.lowercased()
        if lowered == "transparent" || lowered == "none" { self = .clear; return }
        if let hex = Self.names[lowered] { self.init(parsing: hex); return }
        if text.contains(",") {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
                .map { UInt8($0.trimmingSpacesAndTabs()) }
            guard parts.count == 3 || parts.count == 4, !parts.contains(nil) else { return nil }
            let channels = parts.compactMap { $0 }
            self.init(red: channels[0], green: channels[1], blue: channels[2], alpha: channels.count == 4 ? channels[3] : 255)
            return
        }
        var hex = text.hasPrefix("#") ? String(text.dropFirst()) : text
        if hex.count == 3 { hex = hex.map { "\($0)\($0)" }.joined() }
        if hex.count == 6 { hex += "ff" }
        guard hex.count == 8, hex.allSatisfy(\.isHexDigit), let value = UInt32(hex, radix: 16) else { return nil }
        self.init(red: UInt8(value >> 24), green: UInt8(value >> 16 & 0xFF), blue: UInt8(value >> 8 & 0xFF),
                  alpha: UInt8(value & 0xFF))
    }

    /// CSS's basic colour keywords and `orange`.
    private static let names: [String: String] = [
        "black": "000000", "silver": "c0c0c0", "gray": "808080", "grey": "808080", "white": "ffffff",
        "maroon": "800000", "red": "ff0000", "purple": "800080", "fuchsia": "ff00ff", "magenta": "ff00ff",
        "green": "008000", "lime": "00ff00", "olive": "808000", "yellow": "ffff00", "navy": "000080",
        "blue": "0000ff", "teal": "008080", "aqua": "00ffff", "cyan": "00ffff", "orange": "ffa500",
    ]

    /// `#rrggbb`, or `#rrggbbaa` when not opaque: what ``init(parsing:)`` reads back, and the
    /// colour's part of a processor's identifier.
    public var description: String {
        let channels = alpha == 255 ? [red, green, blue] : [red, green, blue, alpha]
        return "#" + channels.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// The four bytes of this colour in `format`: premultiplied rounds each colour channel to
    /// `c × a / 255`, as ``Bitmap/premultiplied()`` does.
    func bytes(in format: PixelFormat) -> (UInt8, UInt8, UInt8, UInt8) {
        guard format.isPremultiplied, alpha < 255 else { return (red, green, blue, alpha) }
        func scaled(_ c: UInt8) -> UInt8 {
            let t = UInt32(c) * UInt32(alpha) + 128
            return UInt8((t + (t >> 8)) >> 8)
        }
        return (scaled(red), scaled(green), scaled(blue), alpha)
    }
}
