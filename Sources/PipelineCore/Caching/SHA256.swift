/// SHA-256 (FIPS 180-4), small and dependency-free (Foundation on Linux has no CryptoKit): a
/// stable hash for naming cache keys.
///
/// The pipeline names rendition keys with it, and `DiskCache` names its files by the hex digest
/// of the fetch URL; a ``DataCaching`` implementation whose store limits key length or
/// characters (a file system, a key-value store) can do the same, and a shared Redis tier
/// authenticates whole pictures with it (HMAC-SHA-256). Contiguous input (`Data`, arrays,
/// `String.UTF8View`) is hashed 64 bytes at a time straight from its storage, about 6 ms per MiB in
/// release builds; other sequences a byte at a time. Where CryptoKit or swift-crypto is imported
/// too, write `PipelineCore.SHA256`.
///
/// ```swift
/// let name = SHA256.hexDigest(url.absoluteString.utf8)  // 64 lower-case hex digits
/// ```
public struct SHA256: Sendable {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    private var h: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    /// A hasher with nothing fed yet.
    public init() { buffer.reserveCapacity(64) }

    /// The digest of `bytes` (32 bytes).
    public static func hash<S: Sequence>(_ bytes: S) -> [UInt8] where S.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The digest of `bytes` as 64 lower-case hex digits.
    public static func hexDigest<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        hex(hash(bytes))
    }

    /// `bytes` as lower-case hex digits, two per byte.
    package static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// Feeds more bytes.
    public mutating func update<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        if bytes.withContiguousStorageIfAvailable({ update(contiguous: $0) }) != nil { return }
        for byte in bytes {
            buffer.append(byte)
            if buffer.count == 64 {
                buffer.withUnsafeBufferPointer { Self.compress($0, into: &h) }
                buffer.removeAll(keepingCapacity: true)
            }
            length &+= 1
        }
    }

    /// Fills the partial block first, then compresses whole blocks from `input`'s own storage
    /// and keeps the tail.
    private mutating func update(contiguous input: UnsafeBufferPointer<UInt8>) {
        length &+= UInt64(input.count)
        var rest = input[...]
        if !buffer.isEmpty {
            let taken = rest.prefix(64 - buffer.count)
            buffer.append(contentsOf: taken)
            rest = rest.dropFirst(taken.count)
            guard buffer.count == 64 else { return }
            buffer.withUnsafeBufferPointer { Self.compress($0, into: &h) }
            buffer.removeAll(keepingCapacity: true)
        }
        while rest.count >= 64 {
            Self.compress(UnsafeBufferPointer(rebasing: rest.prefix(64)), into: &h)
            rest = rest.dropFirst(64)
        }
        buffer.append(contentsOf: rest)
    }

    /// Pads, finishes and returns the 32-byte digest.
    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var padding: [UInt8] = [0x80]
        let used = (buffer.count + 1) % 64
        padding += [UInt8](repeating: 0, count: used <= 56 ? 56 - used : 120 - used)
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        update(padding)
        var digest = [UInt8]()
        digest.reserveCapacity(32)
        for word in [h.0, h.1, h.2, h.3, h.4, h.5, h.6, h.7] {
            digest += [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                       UInt8(truncatingIfNeeded: word)]
        }
        return digest
    }

    /// One 64-byte block into the state `h`.
    private static func compress(_ block: UnsafeBufferPointer<UInt8>,
                                 into h: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            k.withUnsafeBufferPointer { k in
                for i in 0..<16 {
                    w[i] = UInt32(block[4 * i]) << 24 | UInt32(block[4 * i + 1]) << 16
                        | UInt32(block[4 * i + 2]) << 8 | UInt32(block[4 * i + 3])
                }
                for i in 16..<64 {
                    let s0 = w[i - 15].rotatedRight(7) ^ w[i - 15].rotatedRight(18) ^ (w[i - 15] >> 3)
                    let s1 = w[i - 2].rotatedRight(17) ^ w[i - 2].rotatedRight(19) ^ (w[i - 2] >> 10)
                    w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                }
                var (a, b, c, d, e, f, g, hh) = h
                for i in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = hh &+ s1 &+ choice &+ k[i] &+ w[i]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
                h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e, h.5 &+ f, h.6 &+ g, h.7 &+ hh)
            }
        }
    }
}

extension UInt32 {
    fileprivate func rotatedRight(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
