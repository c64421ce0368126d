import Foundation
@testable import PipelineCore
import PipelineTestSupport
import Testing

/// ``ThumbHash``: encoding synthetic bitmaps, decoding at any size, the header accessors, and
/// validation of untrusted bytes; and the box average (`Bitmap.boxAveraged(to:)`, internal)
/// the encoder shrinks large bitmaps with. Conformance with the reference is in
/// `ThumbHashConformanceTests`.
struct ThumbHashTests {
    /// A straight bitmap whose pixel (x, y) is `pixel(x, y)`.
    static func bitmap(_ width: Int, _ height: Int, format: PixelFormat = .rgba8Straight,
                       _ pixel: (Int, Int) -> (UInt8, UInt8, UInt8, UInt8)) -> Bitmap {
        var bytes = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let p = pixel(x, y), i = (y * width + x) * 4
                bytes[i] = p.0; bytes[i + 1] = p.1; bytes[i + 2] = p.2; bytes[i + 3] = p.3
            }
        }
        let straight = Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Straight, bytes: bytes)!
        return straight.converted(to: format)
    }

    /// A diagonal colour gradient, opaque.
    static func gradient(_ width: Int, _ height: Int) -> Bitmap {
        bitmap(width, height) { x, y in
            (UInt8(255 * x / max(1, width - 1)), UInt8(255 * y / max(1, height - 1)), UInt8(255 - 255 * x / max(1, width - 1)), 255)
        }
    }

    @Test func aSolidColourDecodesToThatColourEverywhere() throws {
        let hash = ThumbHash(bitmap: Self.bitmap(40, 30) { _, _ in (200, 60, 30, 255) })
        #expect(hash.bytes.count <= ThumbHash.maxByteCount)
        let average = hash.averageColor
        #expect(abs(Int(average.red) - 200) <= 4 && abs(Int(average.green) - 60) <= 4 && abs(Int(average.blue) - 30) <= 4)
        #expect(average.alpha == 255)
        let decoded = hash.bitmap()
        #expect(decoded.pixelFormat == .rgba8Premultiplied)
        for y in 0..<decoded.height {
            for x in 0..<decoded.width {
                let p = decoded.pixel(x: x, y: y)
                #expect(abs(Int(p.r) - 200) <= 4 && abs(Int(p.g) - 60) <= 4 && abs(Int(p.b) - 30) <= 4 && p.a == 255)
            }
        }
    }

    @Test func theHeaderGivesTheAspectRatioAndTheDefaultSize() {
        let landscape = ThumbHash(bitmap: Self.gradient(100, 50))
        #expect(landscape.aspectRatio == 7.0 / 4.0)  // lx 7, ly round(3.5) = 4
        #expect(landscape.defaultSize == PixelSize(width: 32, height: 18))
        #expect(landscape.bitmap().size == landscape.defaultSize)
        let portrait = ThumbHash(bitmap: Self.gradient(30, 90))
        #expect(portrait.aspectRatio == 2.0 / 7.0)
        #expect(portrait.defaultSize == PixelSize(width: 9, height: 32))
        let square = ThumbHash(bitmap: Self.gradient(64, 64))
        #expect(square.aspectRatio == 1 && square.defaultSize == PixelSize(width: 32, height: 32))
    }

    @Test func aRequestedSizeIsRenderedStraightFromTheCoefficients() {
        let hash = ThumbHash(bitmap: Self.gradient(80, 60))
        let large = hash.bitmap(size: PixelSize(width: 320, height: 240))
        #expect(large.size == PixelSize(width: 320, height: 240))
        #expect(Bitmap(thumbHash: hash) == hash.bitmap())
        #expect(Bitmap(thumbHash: hash, size: PixelSize(width: 320, height: 240)) == large)
        // Sampling the continuous picture at 4× the density: the pixel at the centre of each 4 × 4
        // block sits between the same points as the small picture's pixel, so they agree closely.
        let small = hash.bitmap(size: PixelSize(width: 80, height: 60))
        var worst = 0
        for y in 0..<60 {
            for x in 0..<80 {
                let a = small.pixel(x: x, y: y), b = large.pixel(x: x * 4 + 2, y: y * 4 + 2)
                worst = max(worst, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
            }
        }
        #expect(worst <= 6)
        // A side below 1 is taken as 1.
        #expect(hash.bitmap(size: PixelSize(width: 0, height: -3)).size == PixelSize(width: 1, height: 1))
    }

    @Test func theGradientsDirectionSurvives() {
        // Red rises left to right, green top to bottom.
        let decoded = ThumbHash(bitmap: Self.gradient(90, 90)).bitmap()
        let left = decoded.pixel(x: 2, y: 16), right = decoded.pixel(x: 29, y: 16)
        let top = decoded.pixel(x: 16, y: 2), bottom = decoded.pixel(x: 16, y: 29)
        #expect(Int(right.r) - Int(left.r) > 120)
        #expect(Int(bottom.g) - Int(top.g) > 120)
        #expect(Int(left.b) - Int(right.b) > 120)
    }

    @Test func transparentPixelsTakeTheAverageColourInsteadOfDarkening() {
        // Left half opaque red, right half transparent black (straight): the average is red and
        // the right half decodes transparent, not dark.
        let hash = ThumbHash(bitmap: Self.bitmap(60, 40) { x, _ in x < 30 ? (255, 0, 0, 255) : (0, 0, 0, 0) })
        let average = hash.averageColor
        #expect(average.red > 230 && average.green < 30 && average.blue < 30)
        #expect(abs(Int(average.alpha) - 128) <= 10)
        let decoded = hash.bitmap()
        let opaque = decoded.pixel(x: 2, y: decoded.height / 2), clear = decoded.pixel(x: decoded.width - 3, y: decoded.height / 2)
        #expect(opaque.a > 220 && opaque.r > 200)
        #expect(clear.a < 40)
        // Premultiplied output: no channel above alpha.
        for y in 0..<decoded.height {
            for x in 0..<decoded.width {
                let p = decoded.pixel(x: x, y: y)
                #expect(p.r <= p.a && p.g <= p.a && p.b <= p.a)
            }
        }
    }

    @Test func straightAndPremultipliedBitmapsOfOnePictureHashTheSame() {
        // Alpha only 0 or 255, transparent pixels with colour in the straight one: premultiplied
        // they are 0, 0, 0, 0, and the encoder gives them no weight either way.
        let straight = Self.bitmap(50, 50) { x, y in (x + y) % 7 == 0 ? (90, 200, 10, 0) : (UInt8(x * 5), UInt8(y * 5), 128, 255) }
        let premultiplied = straight.premultiplied()
        #expect(premultiplied.pixelFormat == .rgba8Premultiplied)
        #expect(ThumbHash(bitmap: straight) == ThumbHash(bitmap: premultiplied))
    }

    /// A smooth picture with no symmetry (so no coefficient sits at zero, where the 4-bit
    /// code, which has no zero, flips between −1/15 and +1/15 of the scale on rounding noise).
    static func waves(_ width: Int, _ height: Int) -> Bitmap {
        bitmap(width, height) { x, y in
            let u = Double(x) / Double(width), v = Double(y) / Double(height)
            func channel(_ value: Double) -> UInt8 { UInt8(max(0, min(255, 127.5 + 127.5 * value))) }
            return (channel(sin(3.1 * u + 0.4) * cos(1.7 * v - 0.2)), channel(cos(2.3 * u * v + 1.1)),
                    channel(sin(1.3 * v + 2.2 * u - 0.7)), 255)
        }
    }

    @Test func aLargeBitmapIsAveragedDownAndHashesLikeItsSmallVersion() {
        // The same picture drawn at 1000 × 750 and at 100 × 75 (what the encoder averages the
        // large one down to): the hashes decode to nearly the same picture. One step of a DC
        // term is 4 (luminance) or 8 (colour) units of 255, so "nearly" is a mean under 2.
        let large = ThumbHash(bitmap: Self.waves(1000, 750)), small = ThumbHash(bitmap: Self.waves(100, 75))
        #expect(large.aspectRatio == small.aspectRatio)
        let mae = absoluteDifference(large.bitmap(), small.bitmap()).mean
        #expect(mae <= 2, "mean abs error \(mae)")
        // Premultiplied and straight large inputs are averaged alike.
        let premultiplied = ThumbHash(bitmap: Self.waves(1000, 750).premultiplied())
        #expect(absoluteDifference(premultiplied.bitmap(), large.bitmap()).mean <= 1)
        // A uniform picture stays uniform through the average, straight or premultiplied, with
        // alpha. (Its AC bytes are noise: every coefficient is 0 but for rounding, and the
        // scale, quantized to 0, makes them decode to nothing.)
        let flat = ThumbHash(bitmap: Self.bitmap(40, 40) { _, _ in (10, 120, 240, 160) })
        let flatLarge = ThumbHash(bitmap: Self.bitmap(400, 400) { _, _ in (10, 120, 240, 160) })
        let flatPremultiplied = ThumbHash(bitmap: Self.bitmap(400, 400, format: .rgba8Premultiplied) { _, _ in (10, 120, 240, 160) })
        for hash in [flatLarge, flatPremultiplied] {
            #expect(hash.bytes[0..<6] == flat.bytes[0..<6] || absoluteDifference(hash.bitmap(), flat.bitmap()).mean <= 2)
            let decoded = hash.bitmap()
            #expect(decoded.pixel(x: 0, y: 0) == decoded.pixel(x: 31, y: 31))
        }
    }

    @Test func theBoxAverageWeighsColourByAlphaInBothFormats() throws {
        // Columns alternate opaque red and transparent (straight: green under alpha 0).
        let straight = Self.bitmap(4, 2) { x, _ in x % 2 == 0 ? (255, 0, 0, 255) : (0, 255, 0, 0) }
        let reduced = straight.boxAveraged(to: PixelSize(width: 2, height: 1))
        #expect(reduced.pixelFormat == .rgba8Straight && reduced.size == PixelSize(width: 2, height: 1))
        #expect(reduced.pixel(x: 0, y: 0) == (255, 0, 0, 128) && reduced.pixel(x: 1, y: 0) == (255, 0, 0, 128))
        let premultiplied = straight.premultiplied().boxAveraged(to: PixelSize(width: 2, height: 1))
        #expect(premultiplied.pixelFormat == .rgba8Premultiplied)
        #expect(premultiplied.pixel(x: 0, y: 0) == (128, 0, 0, 128))
        // Fully transparent blocks stay transparent black; 5 columns split 3 + 2.
        let ramp = Self.bitmap(5, 1) { x, _ in (UInt8(x * 10), 0, 0, x == 4 ? 0 : 255) }
        let split = ramp.boxAveraged(to: PixelSize(width: 2, height: 1))
        #expect(split.pixel(x: 0, y: 0) == (10, 0, 0, 255))  // (0 + 10 + 20) / 3
        #expect(split.pixel(x: 1, y: 0) == (30, 0, 0, 128))  // only x = 3 has weight
        #expect(Self.bitmap(2, 2) { _, _ in (9, 9, 9, 0) }.boxAveraged(to: PixelSize(width: 1, height: 1)).pixel(x: 0, y: 0) == (0, 0, 0, 0))
        // Not smaller: the bitmap itself.
        #expect(straight.boxAveraged(to: PixelSize(width: 8, height: 1)) == straight)
    }

    @Test func aOnePixelWideBitmapStillHashes() {
        for size in [PixelSize(width: 1, height: 1), PixelSize(width: 1, height: 300), PixelSize(width: 500, height: 1)] {
            let hash = ThumbHash(bitmap: Self.bitmap(size.width, size.height) { x, y in (UInt8(x % 256), UInt8(y % 256), 7, 255) })
            #expect(ThumbHash(bytes: hash.bytes) == hash)
            #expect(hash.bitmap().size.isValid)
        }
    }

    @Test func bytesAndBase64RoundTrip() throws {
        let hash = ThumbHash(bitmap: Self.gradient(64, 48))
        #expect(ThumbHash(bytes: hash.bytes) == hash)
        #expect(ThumbHash(base64: hash.base64) == hash)
        #expect(hash.description == hash.base64)
        #expect(ThumbHash(base64: "not base64!") == nil)
    }

    @Test func bytesWhoseLengthDisagreesWithTheHeaderAreRejected() throws {
        let opaque = ThumbHash(bitmap: Self.gradient(64, 48))
        let alpha = ThumbHash(bitmap: Self.bitmap(64, 48) { x, _ in (200, 100, 50, UInt8(x * 4)) })
        for hash in [opaque, alpha] {
            #expect(ThumbHash(bytes: Array(hash.bytes.dropLast())) == nil)
            #expect(ThumbHash(bytes: hash.bytes + [0]) == nil)
        }
        #expect(alpha.bytes.count == 25)  // 5 × 5 luminance, alpha: the longest an encoder writes
        #expect(ThumbHash(bytes: [UInt8](repeating: 0, count: 4)) == nil)
        #expect(ThumbHash(bytes: [UInt8](repeating: 0, count: 26)) == nil)
        // A luminance count of 0 is no hash.
        var zeroCount = opaque.bytes
        zeroCount[3] &= ~7
        #expect(ThumbHash(bytes: zeroCount) == nil)
        // Alpha with the longest luminance grid (7): 29 bytes, more than any hash; rejected.
        var tooLong = alpha.bytes
        tooLong[3] |= 7
        #expect(ThumbHash(bytes: tooLong) == nil)
    }

    @Test func noInputOfFiveToTwentyFiveBytesCrashesTheDecoder() {
        var generator = SeededGenerator(seed: 26)
        var accepted = 0, tried = 0
        func check(_ bytes: [UInt8]) {
            tried += 1
            guard let hash = ThumbHash(bytes: bytes) else { return }
            accepted += 1
            let decoded = hash.bitmap(size: PixelSize(width: 3, height: 2))
            #expect(decoded.size == PixelSize(width: 3, height: 2))
            #expect(hash.defaultSize.isValid && max(hash.defaultSize.width, hash.defaultSize.height) == 32)
            #expect(hash.aspectRatio.isFinite && hash.aspectRatio > 0)
            _ = hash.averageColor
        }
        // Every byte value at every position of real hashes (opaque, alpha, landscape, portrait).
        let seeds = [Self.gradient(64, 48), Self.gradient(20, 90), Self.bitmap(70, 70) { x, y in (UInt8(x * 3), 40, UInt8(y * 3), UInt8((x * y) % 256)) }]
        for seed in seeds.map({ ThumbHash(bitmap: $0).bytes }) {
            for position in seed.indices {
                for value in 0...255 {
                    var bytes = seed
                    bytes[position] = UInt8(value)
                    check(bytes)
                }
            }
        }
        // Random bytes of every length from 5 to 25, with the length bits set to agree sometimes.
        for length in 5...25 {
            for _ in 0..<400 { check((0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }) }
        }
        #expect(tried > 20_000)
        #expect(accepted > 1_000)
    }
}
