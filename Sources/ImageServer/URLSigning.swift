import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How URLs are signed: imgproxy's key and salt pairs (hex), any of which may sign, and the
/// signature's length in bytes before base64url. No pair: unsigned URLs are accepted
/// (any signature segment, `insecure` or `unsafe` by convention).
///
/// A signature is imgproxy's: base64url without padding of HMAC-SHA256(key, salt ‖ path), where
/// the path is everything after the signature segment, still percent-encoded, from its `/` on,
/// cut to ``size`` bytes before base64url.
public struct URLSigning: Sendable, Hashable {
    /// Why a key, salt or size cannot sign: found when the server starts, never on a request.
    /// Messages name the pair by its place in the list and never quote a key or a salt.
    public enum ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
        /// A key or salt is empty, or not an even number of hexadecimal digits.
        case invalidHex(role: String, index: Int)
        /// The lists of keys and salts are of different lengths.
        case unequalCounts(keys: Int, salts: Int)
        /// The signature size is outside 1…32 bytes.
        case sizeOutOfRange(Int)

        public var description: String {
            switch self {
            case .invalidHex(let role, let index):
                return "signing \(role) \(index + 1) is not hexadecimal (an even number of 0-9, a-f digits, at least two)"
            case .unequalCounts(let keys, let salts):
                return "signing needs as many salts as keys (\(keys) keys, \(salts) salts)"
            case .sizeOutOfRange(let size):
                return "signature size \(size) is outside 1…32 bytes"
            }
        }
    }

    /// The key and salt pairs (bytes, decoded from hex), any of which may sign; empty: no signing.
    public var pairs: [(key: [UInt8], salt: [UInt8])]
    /// 1–32 bytes of HMAC-SHA256 kept (imgproxy's `IMGPROXY_SIGNATURE_SIZE`, default 32).
    public var size: Int

    /// No signing.
    public init() {
        pairs = []
        size = 32
    }

    /// Signing with imgproxy's configuration: `keys[i]` and `salts[i]` in hexadecimal
    /// (`IMGPROXY_KEY`/`IMGPROXY_SALT`, or the lists of `IMGPROXY_KEYS`/`IMGPROXY_SALTS`) and
    /// the signature's `size` in bytes. Empty lists: no signing.
    /// - Throws: ``ConfigurationError`` for a key or salt that is not hexadecimal, lists of
    ///   different lengths, or a size outside 1…32.
    public init(keys: [String], salts: [String], size: Int = 32) throws(ConfigurationError) {
        guard keys.count == salts.count else { throw .unequalCounts(keys: keys.count, salts: salts.count) }
        guard (1...32).contains(size) else { throw .sizeOutOfRange(size) }
        var pairs: [(key: [UInt8], salt: [UInt8])] = []
        for (index, (key, salt)) in zip(keys, salts).enumerated() {
            guard let keyBytes = Self.bytes(hex: key) else { throw .invalidHex(role: "key", index: index) }
            guard let saltBytes = Self.bytes(hex: salt) else { throw .invalidHex(role: "salt", index: index) }
            pairs.append((keyBytes, saltBytes))
        }
        self.pairs = pairs
        self.size = size
    }

    /// Whether URLs must be signed (a pair is configured).
    public var isEnabled: Bool { !pairs.isEmpty }

    /// The signature segment of `path` (everything after the signature, from its `/`, still
    /// percent-encoded) under the first pair; `nil` without signing. For tests and for apps
    /// that build URLs for their own server.
    public func signature(for path: String) -> String? {
        guard let pair = pairs.first else { return nil }
        return Base64URL.encoded(Self.code(for: path, key: pair.key, salt: pair.salt, size: size))
    }

    /// `path` (from its `/`, percent-encoded) behind its signature segment: `/<signature><path>`,
    /// or `/insecure<path>` without signing. What a page or a test links to.
    public func signedPath(_ path: String) -> String {
        "/" + (signature(for: path) ?? "insecure") + path
    }

    /// Whether `signature` signs `path` under any pair (always, without signing). Every pair's
    /// code is compared in a time that does not depend on where it differs.
    public func verifies(_ signature: some StringProtocol, for path: String) -> Bool {
        guard isEnabled else { return true }
        guard let given = Base64URL.decoded(signature) else { return false }
        var matched = false
        for pair in pairs where HMACSHA256.matches(given, Self.code(for: path, key: pair.key, salt: pair.salt, size: size)) {
            matched = true
        }
        return matched
    }

    private static func code(for path: String, key: [UInt8], salt: [UInt8], size: Int) -> [UInt8] {
        var mac = HMACSHA256(key: key)
        mac.update(salt)
        mac.update(path.utf8)
        return Array(mac.finalize().prefix(size))
    }

    /// The bytes of an even number (at least two) of hexadecimal digits, or `nil`.
    public static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard !digits.isEmpty, digits.count.isMultiple(of: 2), digits.allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }) else { return nil }
        let bytes = stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
        return bytes.count == digits.count / 2 ? bytes : nil
    }

    public static func == (lhs: URLSigning, rhs: URLSigning) -> Bool {
        lhs.size == rhs.size && lhs.pairs.count == rhs.pairs.count
            && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.key == $1.key && $0.salt == $1.salt }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(size)
        for pair in pairs {
            hasher.combine(pair.key)
            hasher.combine(pair.salt)
        }
    }
}
