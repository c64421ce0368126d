/// HMAC-SHA-256 (RFC 2104 over ``SHA256``): a keyed message authentication code, for values a
/// cache reads back from a store that others can write to (a shared Redis tier authenticates
/// its values with it under a secret the fleet shares).
///
/// The key is mixed in once, at `init`; copy a keyed value to authenticate many messages under
/// one key without hashing the key again. Compare codes with ``matches(_:_:)``, whose time does
/// not depend on where two codes differ.
package struct HMACSHA256: Sendable {
    /// SHA-256's block size, in bytes: longer keys are hashed first, shorter ones padded with zeros.
    private static let blockSize = 64

    private var inner = SHA256()
    /// The key block XOR `opad`, hashed before the inner digest.
    private let outerKeyBlock: [UInt8]

    /// A MAC keyed with `key` (any length; RFC 2104 recommends at least 32 bytes).
    package init<K: Collection>(key: K) where K.Element == UInt8 {
        var block = key.count > Self.blockSize ? SHA256.hash(key) : Array(key)
        block += [UInt8](repeating: 0, count: Self.blockSize - block.count)
        inner.update(block.map { $0 ^ 0x36 })
        outerKeyBlock = block.map { $0 ^ 0x5c }
    }

    /// Feeds more of the message.
    package mutating func update<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        inner.update(bytes)
    }

    /// The 32-byte code of everything fed.
    package mutating func finalize() -> [UInt8] {
        var outer = SHA256()
        outer.update(outerKeyBlock)
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// The 32-byte code of `message` under `key`.
    package static func code<M: Sequence, K: Collection>(for message: M, key: K) -> [UInt8]
    where M.Element == UInt8, K.Element == UInt8 {
        var mac = HMACSHA256(key: key)
        mac.update(message)
        return mac.finalize()
    }

    /// Whether two codes are equal, in a time that depends on their lengths only (a
    /// byte-by-byte comparison that stops early tells a forger how many leading bytes are right).
    package static func matches<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
