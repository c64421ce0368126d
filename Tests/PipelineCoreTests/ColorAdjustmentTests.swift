import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Debian's python with Pillow and numpy, `vips` and ImageMagick's `convert`: what
/// `scripts/color-adjustment-reference` runs.
private let referencePython = "/usr/bin/python3"
private let haveReferences = ExternalTool.exists(referencePython) && ExternalTool.exists("/usr/bin/vips")
    && ExternalTool.exists("/usr/bin/convert")
    && ((try? ExternalTool.runBlocking(referencePython, ["-c", "import PIL, numpy"]).status) == 0)

/// What the reference script wrote: its inputs and, for each case, the reference's result.
private struct Manifest: Decodable {
    struct Input: Decodable {
        var width: Int, height: Int, file: String
    }

    struct Step: Decodable {
        var name: String, value: Double
    }

    struct Case: Decodable {
        var input: String, steps: [Step], reference: String, depth: Int
    }

    var inputs: [String: Input]
    var cases: [Case]
}

extension ColorAdjustment {
    /// The adjustment a case's steps describe (the reference's names).
    fileprivate init(_ steps: [Manifest.Step]) {
        self.init()
        for step in steps {
            switch step.name {
            case "offset": brightnessOffset = Int(step.value)
            case "brightness": brightness = step.value
            case "contrast": contrast = step.value
            case "saturation": saturation = step.value
            case "hue": hue = step.value
            default: gamma = step.value
            }
        }
    }
}

@Suite struct ColorAdjustmentTests {
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/color-adjustment-reference").path

    /// Every step, and a chain of five, on a photograph, synthetic gradients, a photograph with
    /// alpha and an alpha ramp whose transparent pixels keep a colour, against the real tools run
    /// on the same straight pixels (`scripts/color-adjustment-reference`):
    ///
    /// - Pillow's `ImageEnhance` (brightness, contrast, saturation) and `vips linear` (the offset):
    ///   **exact**. Our blends are Pillow's single-precision arithmetic and truncation, the luma
    ///   its fixed point; the mean grey its rounding (weighted by alpha where there is alpha, the
    ///   reference being Pillow's `Image.blend` with that grey).
    /// - `vips gamma`: exact, except that white stays 255 where vips's single precision makes it
    ///   254 (exponents 1.5 and 3 here).
    /// - ImageMagick's `-modulate` hue, read at 16 bits: within 0.5 + 0.5/257 of a level, that is
    ///   our value is ImageMagick's correctly rounded to 8 bits, give or take its own 16-bit step
    ///   (an exact half level, which 30° rotations make often, may round either way).
    ///
    /// Alpha comes out exactly as it went in, transparent pixels included.
    @Test(.enabled(if: haveReferences, "Debian's python3 with python3-pil and python3-numpy, vips or ImageMagick is absent: skipped"))
    func everyStepMatchesItsReference() async throws {
        try await withTemporaryDirectory(prefix: "ColorAdjustment") { folder in
            let made = try await ExternalTool.run(referencePython, [Self.script, folder.path], timeout: 300)
            try #require(made.status == 0, "the reference script failed: \(made.stderr)")
            let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: folder.appendingPathComponent("manifest.json")))
            #expect(manifest.cases.count == 100)
            var inputs: [String: Bitmap] = [:]
            for (name, input) in manifest.inputs {
                let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(input.file)))
                let bitmap = try #require(Bitmap(width: input.width, height: input.height, bytesPerRow: input.width * 4,
                                                 pixelFormat: .rgba8Straight, bytes: bytes))
                inputs[name] = bitmap
            }
            for testCase in manifest.cases {
                let input = try #require(inputs[testCase.input])
                let adjustment = ColorAdjustment(testCase.steps)
                let ours = try ImageProcessor.colorAdjustment(adjustment).process(input)
                #expect(ours.pixelFormat == .rgba8Straight)
                let reference = try Data(contentsOf: folder.appendingPathComponent(testCase.reference))
                let label = "\(testCase.input) \(adjustment)"
                let result = testCase.depth == 16
                    ? Self.compare16(ours, input, reference)
                    : Self.compare8(ours, input, reference, whiteMayBe254: adjustment.gamma != 1)
                #expect(result.alphaKept, "\(label): alpha changed")
                #expect(result.worst <= (testCase.depth == 16 ? 0.5 + 0.5 / 257 + 1e-9 : 0),
                        "\(label): \(result.worst) levels from the reference at pixel \(result.at)")
                // The same picture premultiplied: exactly the straight path on its straightened
                // pixels, premultiplied back (the only loss is the one premultiplied storage has).
                let premultiplied = input.premultiplied()
                let fromPremultiplied = try ImageProcessor.colorAdjustment(adjustment).process(premultiplied)
                #expect(fromPremultiplied.pixelFormat == .rgba8Premultiplied)
                let expected = try ImageProcessor.colorAdjustment(adjustment).process(premultiplied.straightened()).premultiplied()
                #expect(fromPremultiplied.withUnsafeBytes { Array($0) } == expected.withUnsafeBytes { Array($0) },
                        "\(label): premultiplied input differs from its straight path")
            }
        }
    }

    /// The largest difference between our straight result and an 8-bit reference, over colour;
    /// with `whiteMayBe254`, our 255 against vips's 254 counts as none.
    private static func compare8(_ ours: Bitmap, _ input: Bitmap, _ reference: Data, whiteMayBe254: Bool)
        -> (worst: Double, at: Int, alphaKept: Bool)
    {
        let out = ours.withUnsafeBytes { Array($0) }, source = input.withUnsafeBytes { Array($0) }, ref = [UInt8](reference)
        guard ref.count == out.count else { return (.infinity, -1, false) }
        var worst = 0.0, at = -1, alphaKept = true
        for i in stride(from: 0, to: out.count, by: 4) {
            alphaKept = alphaKept && out[i + 3] == source[i + 3] && ref[i + 3] == source[i + 3]
            for c in 0..<3 where out[i + c] != ref[i + c] && !(whiteMayBe254 && out[i + c] == 255 && ref[i + c] == 254) {
                let difference = abs(Double(out[i + c]) - Double(ref[i + c]))
                if difference > worst { (worst, at) = (difference, i / 4) }
            }
        }
        return (worst, at, alphaKept)
    }

    /// The largest difference between our result and a 16-bit reference (little-endian RGBA)
    /// read in 8-bit levels, over colour.
    private static func compare16(_ ours: Bitmap, _ input: Bitmap, _ reference: Data) -> (worst: Double, at: Int, alphaKept: Bool) {
        let out = ours.withUnsafeBytes { Array($0) }, source = input.withUnsafeBytes { Array($0) }, ref = [UInt8](reference)
        guard ref.count == out.count * 2 else { return (.infinity, -1, false) }
        var worst = 0.0, at = -1, alphaKept = true
        for i in stride(from: 0, to: out.count, by: 4) {
            alphaKept = alphaKept && out[i + 3] == source[i + 3]
            for c in 0..<3 {
                let level = Double(Int(ref[2 * (i + c)]) | Int(ref[2 * (i + c) + 1]) << 8) * 255 / 65535
                let difference = abs(Double(out[i + c]) - level)
                if difference > worst { (worst, at) = (difference, i / 4) }
            }
        }
        return (worst, at, alphaKept)
    }

    /// A premultiplied picture with every alpha level, transparent pixels among them.
    private static let translucent: Bitmap = {
        var bytes: [UInt8] = []
        for i in 0..<(64 * 16) {
            let a = UInt32(i % 256), r = UInt32(i * 37 % 256), g = UInt32(i * 11 % 256), b = UInt32(i * 101 % 256)
            bytes += [r * a / 255, g * a / 255, b * a / 255, a].map { UInt8($0) }
        }
        return Bitmap(width: 64, height: 16, bytesPerRow: 64 * 4, bytes: bytes)!
    }()

    @Test(arguments: [ColorAdjustment(brightnessOffset: 255), ColorAdjustment(brightness: 3), ColorAdjustment(contrast: 0),
                      ColorAdjustment(saturation: 5), ColorAdjustment(hue: 90), ColorAdjustment(gamma: 0.2),
                      ColorAdjustment(brightnessOffset: -40, brightness: 1.5, contrast: 2, saturation: 0, hue: -120, gamma: 2.4)])
    func premultipliedPicturesKeepAlphaAndTransparency(adjustment: ColorAdjustment) throws {
        let out = try ImageProcessor.colorAdjustment(adjustment).process(Self.translucent)
        for y in 0..<out.height {
            for x in 0..<out.width {
                let p = out.pixel(x: x, y: y), q = Self.translucent.pixel(x: x, y: y)
                #expect(p.a == q.a)
                #expect(p.r <= p.a && p.g <= p.a && p.b <= p.a, "colour above alpha at \(x),\(y)")
                if q.a == 0 { #expect(p.r == 0 && p.g == 0 && p.b == 0) }
            }
        }
    }

    @Test func theDefaultsLeaveThePictureAndTheShorthandsNameTheirComponent() throws {
        let identity = try ImageProcessor.colorAdjustment(ColorAdjustment()).process(Self.translucent)
        #expect(identity == Self.translucent)
        #expect(ImageProcessor.contrast(1.5).identifier == ImageProcessor.colorAdjustment(ColorAdjustment(contrast: 1.5)).identifier)
        #expect(ImageProcessor.contrast(1.5).identifier == "colorAdjustment(contrast=1.5)")
        #expect(ImageProcessor.brightness(1.5).identifier != ImageProcessor.brightness(offset: 1).identifier)
        let all = ColorAdjustment(brightnessOffset: 2, brightness: 3, contrast: 4, saturation: 5, hue: 6, gamma: 7)
        #expect(ImageProcessor.colorAdjustment(all).identifier
            == "colorAdjustment(offset=2,brightness=3.0,contrast=4.0,saturation=5.0,hue=6.0,gamma=7.0)")
        // A full turn of hue is none.
        let turned = try ImageProcessor.hue(degrees: 360).process(Self.translucent)
        #expect(turned == Self.translucent)
    }

    @Test(arguments: [ColorAdjustment(brightnessOffset: 256), ColorAdjustment(brightness: -0.1), ColorAdjustment(contrast: .nan),
                      ColorAdjustment(saturation: 1001), ColorAdjustment(hue: .infinity), ColorAdjustment(gamma: 0),
                      ColorAdjustment(gamma: 0.0009)])
    func outOfRangeComponentsAreRefused(adjustment: ColorAdjustment) {
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.colorAdjustment(adjustment).process(Self.translucent) }
    }
}
