import Foundation

/// The sRGB transfer function (IEC 61966-2-1), for expected values computed apart from the code
/// under test.
public enum SRGBTransfer {
    /// Encoded value (0–1) → linear light.
    public static func decode(_ v: Double) -> Double { v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4) }

    /// Linear light → encoded value, clamped to 0–1 first.
    public static func encode(_ v: Double) -> Double {
        let c = min(1, max(0, v))
        return c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1 / 2.4) - 0.055
    }
}
