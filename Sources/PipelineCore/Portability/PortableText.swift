#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The few text operations of full Foundation the package's modules use, written on the standard
// library so they link only FoundationEssentials (which lacks CharacterSet, `String(format:)`,
// percent-encoding and `trimmingCharacters(in:)` on Linux). Each gives the bytes Foundation gave;
// PortableTextTests compares them with Foundation's over many inputs.

extension StringProtocol {
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`: Unicode White_Space scalars and
    /// U+200B (Foundation's set) removed from both ends, scalar by scalar as Foundation does.
    package func trimmingWhitespace() -> String {
        trimmingScalars { $0.properties.isWhitespace || $0 == "\u{200B}" }
    }

    /// `trimmingCharacters(in: .whitespaces)`: spaces (Unicode category Zs), tabs and U+200B, not newlines.
    package func trimmingSpacesAndTabs() -> String {
        trimmingScalars { $0 == "\t" || $0 == "\u{200B}" || $0.properties.generalCategory == .spaceSeparator }
    }

    private func trimmingScalars(_ trimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed($0) }),
              let last = scalars.lastIndex(where: { !trimmed($0) }) else { return "" }
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }

    /// `replacingOccurrences(of: target, with: replacement)` (with `options: .caseInsensitive`
    /// when asked) for an ASCII `target`: its bytes matched left to right (ASCII case folded).
    package func replacingOccurrences(ofASCII target: String, with replacement: String, caseInsensitive: Bool = false) -> String {
        let fold: (UInt8) -> UInt8 = { caseInsensitive && (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 + 32 : $0 }
        let needle = target.utf8.map(fold), bytes = Array(utf8)
        guard !needle.isEmpty else { return String(self) }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if index + needle.count <= bytes.count, zip(bytes[index..<index + needle.count], needle).allSatisfy({ fold($0) == $1 }) {
                result.append(contentsOf: replacement.utf8)
                index += needle.count
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `addingPercentEncoding(withAllowedCharacters:)` for an ASCII set: every UTF-8 byte that
    /// `allowed` refuses becomes `%XX` (upper-case hex), as Foundation writes it. With
    /// `PercentEncodingSet.urlPathAllowed`, a `:` before the first `/` is encoded too (so the
    /// path cannot read as a scheme), as Foundation does for that set.
    package func percentEncoded(allowing allowed: PercentEncodingSet) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var firstSegment = true
        for byte in utf8 {
            if byte == UInt8(ascii: "/") { firstSegment = false }
            if allowed.contains(byte) && !(allowed.encodesColonInFirstSegment && firstSegment && byte == UInt8(ascii: ":")) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0xF))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `removingPercentEncoding`: `%XX` escapes decoded; `nil` for a `%` without two hex digits
    /// after it, or escapes that decode to bytes that are not UTF-8, as Foundation answers.
    package var removingPercentEscapes: String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

private func hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// The ASCII characters a percent-encoding keeps as they are: Foundation's URL character sets.
package struct PercentEncodingSet: Sendable {
    private var bits: (UInt64, UInt64) = (0, 0)
    /// Foundation's `urlPathAllowed` rule: `:` is encoded in the first segment of a path.
    fileprivate var encodesColonInFirstSegment = false

    /// The set of the ASCII characters in `characters`.
    package init(_ characters: String) {
        for byte in characters.utf8 where byte < 128 {
            if byte < 64 { bits.0 |= 1 << UInt64(byte) } else { bits.1 |= 1 << UInt64(byte - 64) }
        }
    }

    package func contains(_ byte: UInt8) -> Bool {
        byte < 64 ? bits.0 & (1 << UInt64(byte)) != 0 : byte < 128 && bits.1 & (1 << UInt64(byte - 64)) != 0
    }

    package func union(_ other: PercentEncodingSet) -> PercentEncodingSet {
        var union = self
        union.bits = (bits.0 | other.bits.0, bits.1 | other.bits.1)
        return union
    }

    private static let alphanumerics = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    /// `CharacterSet.urlPathAllowed`.
    package static let urlPathAllowed: PercentEncodingSet = {
        var set = PercentEncodingSet(alphanumerics + "!$&'()*+,-./:=@_~")
        set.encodesColonInFirstSegment = true
        return set
    }()
    /// `CharacterSet.urlQueryAllowed`.
    package static let urlQueryAllowed = PercentEncodingSet(alphanumerics + "!$&'()*+,-./:;=?@_~")
    /// RFC 3986's unreserved characters.
    package static let unreserved = PercentEncodingSet(alphanumerics + "-._~")
}

/// `String(format:)` for numbers: C's `snprintf`, which Foundation's formatting calls for the
/// numeric conversions (`%d`, `%02d`, `%.1f`, `%g`, `%08X`…), so every value prints the same
/// characters (round-half-even on the binary value, `nan`, `inf`, `-0.0`). No `%@`: put strings
/// in by interpolation.
package func printfFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    var capacity = buffer.count
    let needed = Int(withVaList(arguments) { vsnprintf(&buffer, capacity, format, $0) })
    if needed >= capacity {  // a va_list is used once: a second one for the longer buffer
        capacity = needed + 1
        buffer = [CChar](repeating: 0, count: capacity)
        _ = withVaList(arguments) { vsnprintf(&buffer, capacity, format, $0) }
    }
    return String(decoding: buffer.prefix(max(needed, 0)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
