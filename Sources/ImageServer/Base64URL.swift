#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Base64url without padding (RFC 4648 §5), as imgproxy writes signatures, sources and encoded
/// file names: Foundation's base64 with `-_` for `+/`. Decoding also takes the padding some
/// clients leave on.
enum Base64URL {
    /// `bytes` in base64url, without `=` padding.
    static func encoded(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.last == "=" { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The bytes of base64url `text` (trailing `=` ignored), or `nil` for a character outside the
    /// alphabet or a length no encoding has.
    static func decoded(_ text: some StringProtocol) -> [UInt8]? {
        var digits = String(text)
        while digits.last == "=" { digits.removeLast() }
        guard !digits.contains(where: { $0 == "+" || $0 == "/" }) else { return nil }
        digits = String(digits.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        digits += String(repeating: "=", count: (4 - digits.utf8.count % 4) % 4)
        return Data(base64Encoded: digits).map(Array.init)
    }
}
