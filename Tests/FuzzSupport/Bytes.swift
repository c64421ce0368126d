/// Big- and little-endian reads and writes on a byte array, bounds-checked: a read past the end
/// is `nil` and a write past the end does nothing, so a mutator can poke at a damaged file
/// without ever trapping.
extension Array where Element == UInt8 {
    /// The big-endian unsigned integer of `width` bytes (1…8) at `offset`, or `nil` past the end.
    func readBE(_ offset: Int, _ width: Int) -> UInt64? {
        guard offset >= 0, width > 0, width <= 8, offset + width <= count else { return nil }
        var value: UInt64 = 0
        for i in 0..<width { value = value << 8 | UInt64(self[offset + i]) }
        return value
    }

    /// The little-endian unsigned integer of `width` bytes (1…8) at `offset`, or `nil` past the end.
    func readLE(_ offset: Int, _ width: Int) -> UInt64? {
        guard offset >= 0, width > 0, width <= 8, offset + width <= count else { return nil }
        var value: UInt64 = 0
        for i in (0..<width).reversed() { value = value << 8 | UInt64(self[offset + i]) }
        return value
    }

    /// Writes the low `width` bytes of `value` big-endian at `offset` (nothing past the end).
    mutating func writeBE(_ offset: Int, _ width: Int, _ value: UInt64) {
        guard offset >= 0, width > 0, width <= 8, offset + width <= count else { return }
        for i in 0..<width { self[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - i))) }
    }

    /// Writes the low `width` bytes of `value` little-endian at `offset` (nothing past the end).
    mutating func writeLE(_ offset: Int, _ width: Int, _ value: UInt64) {
        guard offset >= 0, width > 0, width <= 8, offset + width <= count else { return }
        for i in 0..<width { self[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }

    /// Whether the bytes at `offset` are the ASCII of `tag`.
    func has(_ tag: String, at offset: Int) -> Bool {
        let ascii = Array(tag.utf8)
        guard offset >= 0, offset + ascii.count <= count else { return false }
        return self[offset..<offset + ascii.count].elementsEqual(ascii)
    }

    /// The four bytes at `offset` as text (a chunk or box type), `????` past the end.
    func fourCC(at offset: Int) -> String {
        guard offset >= 0, offset + 4 <= count else { return "????" }
        return String(self[offset..<offset + 4].map { (0x20...0x7E).contains($0) ? Character(UnicodeScalar($0)) : "." })
    }
}
