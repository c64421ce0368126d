import Foundation
import PipelineCore
import Testing

/// `PipelineCore`'s HMAC-SHA-256 against RFC 4231's test vectors (here, beside its one user, the
/// Redis tier's value authentication).
@Suite("HMAC-SHA-256")
struct HMACSHA256Tests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) ?? 0 }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// RFC 4231, section 4: test cases 1–4, 6 and 7 (keys shorter than, equal to and longer
    /// than a block, data of every length); case 5 (a truncated code) in its own test.
    @Test(arguments: [
        ("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
         String(repeating: "dd", count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        ("0102030405060708090a0b0c0d0e0f10111213141516171819",
         String(repeating: "cd", count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        (String(repeating: "aa", count: 131),
         "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (String(repeating: "aa", count: 131),
         "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func rfc4231Vectors(key: String, data: String, code: String) {
        #expect(Self.hex(HMACSHA256.code(for: Self.bytes(data), key: Self.bytes(key))) == code)
        // Fed in pieces, from a keyed copy: the same code.
        let keyed = HMACSHA256(key: Self.bytes(key))
        var mac = keyed
        let message = Self.bytes(data)
        for chunk in stride(from: 0, to: message.count, by: 7) { mac.update(message[chunk..<min(chunk + 7, message.count)]) }
        #expect(Self.hex(mac.finalize()) == code)
    }

    /// RFC 4231 test case 5: the code truncated to 128 bits.
    @Test func rfc4231TruncatedVector() {
        let code = HMACSHA256.code(for: Array("Test With Truncation".utf8), key: [UInt8](repeating: 0x0c, count: 20))
        #expect(Self.hex(Array(code.prefix(16))) == "a3b6167473100ee06e0c796c2955552b")
    }

    @Test func codesMatchOnlyWhenEqual() {
        let code = HMACSHA256.code(for: [1, 2, 3], key: [9])
        #expect(HMACSHA256.matches(code, code))
        #expect(!HMACSHA256.matches(code, code.dropLast()))
        var other = code
        other[31] ^= 1
        #expect(!HMACSHA256.matches(code, other))
    }
}
