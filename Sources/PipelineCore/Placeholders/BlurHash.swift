#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A placeholder hash of a picture: Wolt's BlurHash (https://blurha.sh), a short base-83 text
/// (28 characters at the default 4 × 3 components) that decodes to a blurred picture of its
/// colours. Beside ``ThumbHash``, for clients that already speak BlurHash (imagor's `/meta`,
/// imgproxy's and Mastodon's APIs); ThumbHash keeps alpha and the aspect ratio, BlurHash does not.
///
/// The hash is the first `x` × `y` coefficients of a cosine transform of the picture in linear
/// light: the average colour as sRGB in 4 characters, the largest AC coefficient's scale in 1,
/// then each AC coefficient (a signed square root, 19 steps per channel) in 2 characters.
public struct BlurHash: Hashable, Sendable, CustomStringConvertible {
    /// The hash as the reference implementation writes it.
    public let string: String

    /// The component counts (horizontal, vertical) the encoder uses unless told: 4 × 3, the
    /// default of Wolt's reference encoders and imgproxy's.
    public static let defaultComponents = (x: 4, y: 3)

    /// The largest side, in pixels, the encoder reads: 100, ``ThumbHash/maxEncodedSide``. A
    /// larger bitmap is first reduced to fit, as for ThumbHash (one small picture serves
    /// both hashes); a handful of cosines sees no more in more pixels, it only costs time.
    public static let maxEncodedSide = ThumbHash.maxEncodedSide

    /// The horizontal and vertical component counts (1–9 each), from the first character.
    public let components: (x: Int, y: Int)

    /// A hash from its text; `nil` when it is not one: fewer than 6 characters, a character
    /// outside the base-83 alphabet, component counts outside 1–9 (the size flag's 81 and 82),
    /// a length other than the component counts imply, or a value the encoding cannot hold (an
    /// average above `FFFFFF`, an AC pair above 19 steps a channel), which the reference's
    /// decoders would read as colours past white.
    public init?(string: String) {
        let digits = string.utf8.map { Self.value[Int($0)] }
        guard digits.count >= 6, digits.allSatisfy({ $0 >= 0 }), digits[0] < 81 else { return nil }
        let x = digits[0] % 9 + 1, y = digits[0] / 9 + 1
        guard digits.count == 4 + 2 * x * y, Self.decode83(string.utf8.dropFirst(2).prefix(4)) <= 0xFF_FFFF else { return nil }
        for pair in stride(from: 6, to: digits.count, by: 2) where digits[pair] * 83 + digits[pair + 1] >= 19 * 19 * 19 {
            return nil
        }
        self.string = string
        components = (x, y)
    }

    /// The text.
    public var description: String { string }

    /// Two hashes are equal when their texts are.
    public static func == (lhs: BlurHash, rhs: BlurHash) -> Bool { lhs.string == rhs.string }

    /// Hashes the text.
    public func hash(into hasher: inout Hasher) { hasher.combine(string) }

    // MARK: - Encoding

    /// The hash of `bitmap` (premultiplied or straight) with `x` × `y` components (each clamped
    /// to 1–9; default ``defaultComponents``), as the reference computes it over the straight
    /// RGB of at most ``maxEncodedSide`` × ``maxEncodedSide`` pixels (a larger bitmap is
    /// reduced to fit first as ``ThumbHash/init(bitmap:)`` reduces it, as Pillow's
    /// `thumbnail` does). Alpha is not encoded:
    /// the colour values are read as they are, as the reference reads RGB.
    ///
    /// The arithmetic is the reference's (`blurhash` on PyPI, a port of Wolt's Swift encoder):
    /// the same sRGB curve, sums in the same order in double precision, the same quantising,
    /// so the text equals the reference's for the same pixels.
    ///
    /// - Complexity: `x` × `y` multiply-adds per channel and pixel of the (at most 100 × 100)
    ///   picture, after the reduction of a larger one.
    public init(bitmap: Bitmap, components x: Int = defaultComponents.x, _ y: Int = defaultComponents.y) {
        let small = ThumbHash.fitting(bitmap)
        self = Self.encode(width: small.width, height: small.height, rgba: small.unpremultipliedBytes(),
                           x: min(9, max(1, x)), y: min(9, max(1, y)))
    }

    /// The reference's encoder over straight RGBA8 (alpha ignored).
    static func encode(width w: Int, height h: Int, rgba: [UInt8], x nx: Int, y ny: Int) -> BlurHash {
        let count = w * h
        var linear = [Double](repeating: 0, count: count * 3)
        for i in 0..<count {
            for c in 0..<3 { linear[i * 3 + c] = SRGBTransfer.linear[Int(rgba[i * 4 + c])] }
        }
        let width = Double(w), height = Double(h)
        // cos(π·i·x / width) as the reference computes it, once per column and row.
        let cosX = (0..<nx).map { i in (0..<w).map { cos(Double.pi * Double(i) * Double($0) / width) } }
        let cosY = (0..<ny).map { j in (0..<h).map { cos(Double.pi * Double(j) * Double($0) / height) } }
        var factors: [(Double, Double, Double)] = []
        var maximumAC = 0.0
        for j in 0..<ny {
            for i in 0..<nx {
                let norm = i == 0 && j == 0 ? 1.0 : 2.0
                var r = 0.0, g = 0.0, b = 0.0
                for py in 0..<h {
                    let cy = cosY[j][py]
                    for px in 0..<w {
                        let basis = norm * cosX[i][px] * cy
                        let p = (py * w + px) * 3
                        r += basis * linear[p]
                        g += basis * linear[p + 1]
                        b += basis * linear[p + 2]
                    }
                }
                let scale = width * height
                let factor = (r / scale, g / scale, b / scale)
                factors.append(factor)
                if i != 0 || j != 0 { maximumAC = max(maximumAC, abs(factor.0), abs(factor.1), abs(factor.2)) }
            }
        }
        let dc = factors[0]
        let dcValue = Self.sRGB(dc.0) << 16 + Self.sRGB(dc.1) << 8 + Self.sRGB(dc.2)
        let quantisedMaximum = factors.count > 1 ? Int(max(0, min(82, (maximumAC * 166 - 0.5).rounded(.down)))) : 0
        let acScale = Double(quantisedMaximum + 1) / 166
        func quantised(_ value: Double) -> Int {
            Int(max(0, min(18, (signedPower(value / acScale, 0.5) * 9 + 9.5).rounded(.down))))
        }
        var text = Self.base83((nx - 1) + (ny - 1) * 9, length: 1) + Self.base83(quantisedMaximum, length: 1)
            + Self.base83(dcValue, length: 4)
        for factor in factors.dropFirst() {
            text += Self.base83(quantised(factor.0) * 19 * 19 + quantised(factor.1) * 19 + quantised(factor.2), length: 2)
        }
        return BlurHash(string: text, components: (nx, ny))
    }

    /// A hash the encoder wrote (its length is the one the components imply).
    private init(string: String, components: (x: Int, y: Int)) {
        self.string = string
        self.components = components
    }

    // MARK: - Decoding

    /// The average colour, opaque: the hash's first coefficient.
    public var averageColor: RGBAColor {
        let dc = Self.decode83(string.utf8.dropFirst(2).prefix(4))
        return RGBAColor(red: UInt8(dc >> 16), green: UInt8((dc >> 8) & 255), blue: UInt8(dc & 255))
    }

    /// The blurred picture the hash describes, opaque RGBA8, at `size` (default 32 × 32; the
    /// hash keeps no aspect ratio, so give the picture's). `punch` scales the AC coefficients
    /// (contrast), 1 by default, as the reference's decoder. A few dozen pixels a side show all
    /// a hash holds: scale the result up rather than decoding large.
    public func bitmap(size: PixelSize = PixelSize(width: 32, height: 32), punch: Double = 1) -> Bitmap {
        let digits = string.utf8.map { Self.value[Int($0)] }
        let (nx, ny) = components
        let maximum = Double(digits[1] + 1) / 166 * punch
        let dc = Self.decode83(string.utf8.dropFirst(2).prefix(4))
        var colours = [(SRGBTransfer.linear[dc >> 16], SRGBTransfer.linear[(dc >> 8) & 255], SRGBTransfer.linear[dc & 255])]
        for component in 1..<(nx * ny) {
            let value = digits[4 + component * 2] * 83 + digits[5 + component * 2]
            func channel(_ step: Int) -> Double { signedPower((Double(step) - 9) / 9, 2) * maximum }
            colours.append((channel(value / (19 * 19)), channel((value / 19) % 19), channel(value % 19)))
        }
        let w = max(1, size.width), h = max(1, size.height)
        let cosX = (0..<nx).map { i in (0..<w).map { cos(Double.pi * Double($0) * Double(i) / Double(w)) } }
        let cosY = (0..<ny).map { j in (0..<h).map { cos(Double.pi * Double($0) * Double(j) / Double(h)) } }
        var bytes = [UInt8](repeating: 255, count: w * h * 4)
        for y in 0..<h {
            for x in 0..<w {
                var r = 0.0, g = 0.0, b = 0.0
                for j in 0..<ny {
                    for i in 0..<nx {
                        let basis = cosX[i][x] * cosY[j][y]
                        let colour = colours[i + j * nx]
                        r += colour.0 * basis
                        g += colour.1 * basis
                        b += colour.2 * basis
                    }
                }
                let p = (y * w + x) * 4
                bytes[p] = UInt8(Self.sRGB(r))
                bytes[p + 1] = UInt8(Self.sRGB(g))
                bytes[p + 2] = UInt8(Self.sRGB(b))
            }
        }
        return Bitmap(width: w, height: h, bytesPerRow: w * 4, bytes: bytes) ?? Bitmap(zeroed: PixelSize(width: w, height: h))
    }

    // MARK: - Arithmetic

    /// Linear light to sRGB 0–255, clamped, rounded as the reference (`Int(v + 0.5)`).
    private static func sRGB(_ linear: Double) -> Int {
        let value = max(0, min(1, linear))
        return value <= 0.0031308 ? Int(value * 12.92 * 255 + 0.5) : Int((1.055 * pow(value, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)

    /// Each byte's base-83 digit, or -1.
    private static let value: [Int] = {
        var table = [Int](repeating: -1, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = index }
        return table
    }()

    private static func base83(_ value: Int, length: Int) -> String {
        var digits = [UInt8](repeating: 0, count: length), rest = value
        for index in stride(from: length - 1, through: 0, by: -1) {
            digits[index] = alphabet[rest % 83]
            rest /= 83
        }
        return String(decoding: digits, as: UTF8.self)
    }

    private static func decode83(_ bytes: some Sequence<UInt8>) -> Int {
        bytes.reduce(0) { $0 * 83 + max(0, value[Int($1)]) }
    }
}

/// `|value|^exponent` with `value`'s sign.
private func signedPower(_ value: Double, _ exponent: Double) -> Double {
    copysign(pow(abs(value), exponent), value)
}
