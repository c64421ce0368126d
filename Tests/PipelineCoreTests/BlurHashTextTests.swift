import PipelineCore
import Testing

/// ``BlurHash/init(string:)`` on texts no encoder writes: whatever a client sends, a text is
/// refused or decodes, never traps.
struct BlurHashTextTests {
    /// The four DC digits can spell up to 83⁴ − 1, past the 24 bits of an sRGB colour: such a
    /// text was accepted, then `averageColor` trapped on `UInt8(724)` and `bitmap()` read past
    /// the 256-entry linear table.
    @Test func aDCAboveTwentyFourBitsIsRefused() {
        #expect(BlurHash(string: "00~~~~") == nil, "DC 83⁴ − 1")
        #expect(BlurHash(string: "00TSUB") == nil, "DC 0x1000000, one past white")
        let white = BlurHash(string: "00TSUA")  // 0xFFFFFF
        #expect(white?.averageColor == RGBAColor(red: 255, green: 255, blue: 255))
        #expect(white?.bitmap(size: PixelSize(width: 2, height: 2)).size == PixelSize(width: 2, height: 2))
    }

    /// An AC pair above 18·19² + 18·19 + 18 (three channels of 19 steps) is not a hash either.
    @Test func anACAboveNineteenStepsIsRefused() {
        // 2 × 1 components: one AC pair after the four DC digits.
        #expect(BlurHash(string: "10000022") != nil, "AC 2·83 + 2")
        #expect(BlurHash(string: "100000\(Self.digits(6858))") != nil, "the largest AC")
        #expect(BlurHash(string: "100000\(Self.digits(6859))") == nil, "one past it")
    }

    /// The size flag's 81 and 82 spell ten vertical components, which the encoder never writes
    /// (1–9 each, as ``BlurHash/components`` says).
    @Test func tenComponentsAreRefused() {
        let ten = "~0" + "0000" + String(repeating: "00", count: 2 * 10 - 1)
        #expect(BlurHash(string: ten) == nil)
        let largest = "|0" + "0000" + String(repeating: "00", count: 9 * 9 - 1)  // size flag 80: 9 × 9
        #expect(BlurHash(string: largest)?.components.x == 9)
        #expect(BlurHash(string: largest)?.components.y == 9)
        #expect(BlurHash(string: largest)?.bitmap(size: PixelSize(width: 3, height: 2)).size == PixelSize(width: 3, height: 2))
    }

    /// `value` as two base-83 digits.
    static func digits(_ value: Int) -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")
        return String([alphabet[value / 83], alphabet[value % 83]])
    }
}
