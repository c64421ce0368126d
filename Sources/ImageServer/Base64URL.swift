/// Base64url without padding (RFC 4648 §5), as imgproxy writes signatures, sources and encoded
/// file names; decoding also takes the padding some clients leave on.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` in base64url, without `=` padding.
    static func encoded(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var buffer: UInt32 = 0, bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int(buffer >> UInt32(bits) & 0x3F)])
            }
        }
        if bits > 0 { out.append(alphabet[Int(buffer << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of base64url `text` (trailing `=` ignored), or `nil` for a character outside the
    /// alphabet or a length no encoding has (one digit left over).
    static func decoded(_ text: some StringProtocol) -> [UInt8]? {
        var digits = Array(text.utf8)[...]
        while digits.last == UInt8(ascii: "=") { digits = digits.dropLast() }
        guard digits.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count * 3 / 4)
        var buffer: UInt32 = 0, bits = 0
        for digit in digits {
            guard let value = value(of: digit) else { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return out
    }

    private static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return digit - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return digit - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): return 62
        case UInt8(ascii: "_"): return 63
        default: return nil
        }
    }
}
