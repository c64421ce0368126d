import Foundation
import PipelineCore
import Testing

@Suite("SHA-256 and CRC-32 against known vectors")
struct SHA256Tests {
    @Test func sha256MatchesTheFIPSVectors() {
        #expect(SHA256.hexDigest("".utf8) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest("abc".utf8) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hexDigest(("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
            + "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu").utf8)
            == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: 100_000))  // 100,000 × "a", from `sha256sum`
            == "6d1cf22d7cc09b085dfc25ee1a1f3ae0265804c607bc2074ad253bcc82fd81ee")
    }

    @Test func sha256PadsEveryLengthAroundABlockBoundary() {
        // 55, 56 and 64 bytes are the padding edge cases; values from `sha256sum`.
        #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: 55))
            == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: 56))
            == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(SHA256.hexDigest([UInt8](repeating: 0x61, count: 64))
            == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }

    @Test func sha256GivesTheSameDigestFedInPiecesOfEveryKind() {
        // 100,000 × "a" again, fed as arrays, `Data`, slices and a lazy (non-contiguous) sequence
        // of lengths that start and end inside and across blocks.
        let expected = "6d1cf22d7cc09b085dfc25ee1a1f3ae0265804c607bc2074ad253bcc82fd81ee"
        for step in [1, 7, 63, 64, 65, 130, 4_099] {
            var hasher = SHA256(), fed = 0, kind = 0
            while fed < 100_000 {
                let count = min(step + kind % 3, 100_000 - fed)
                let piece = [UInt8](repeating: 0x61, count: count)
                switch kind % 4 {
                case 0: hasher.update(piece)
                case 1: hasher.update(Data(piece))
                case 2: hasher.update(piece[...])
                default: hasher.update(piece.lazy.map { $0 })
                }
                fed += count
                kind += 1
            }
            let hex = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            #expect(hex == expected, "pieces of about \(step) bytes")
        }
    }

    @Test func crc32MatchesTheCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
    }

    /// Slicing-by-8 against the bit-at-a-time definition, at every length up to 40 and every
    /// alignment of a longer buffer, whole and fed in pieces.
    @Test func crc32AgreesWithTheBitwiseDefinition() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                c ^= UInt32(byte)
                for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            }
            return ~c
        }
        var seed: UInt32 = 12345
        let bytes = (0..<5000).map { _ -> UInt8 in
            seed = seed &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: seed >> 16)
        }
        for length in 0...40 { #expect(CRC32.checksum(Array(bytes[0..<length])) == bitwise(bytes[0..<length]), "length \(length)") }
        for start in 0..<8 {
            let slice = bytes[start..<(start + 4093)]
            let whole = bitwise(slice)
            #expect(slice.withUnsafeBytes { CRC32.checksum($0) } == whole, "offset \(start)")
            let split = start * 517 + 3
            let first = slice.prefix(split).withUnsafeBytes { CRC32.checksum($0) }
            #expect(slice.dropFirst(split).withUnsafeBytes { CRC32.checksum($0, continuing: first) } == whole)
        }
    }
}
