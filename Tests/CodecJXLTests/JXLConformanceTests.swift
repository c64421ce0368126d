import CodecJXL
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Every valid file of `../shared/corpus/jxl/` against djxl 0.7's decode (`ref/*.pam`).
///
/// Tolerances: the same library (libjxl 0.7.0) decodes both, so the 8-bit files must be exact
/// (0 per sample, colour compared where alpha is not 0, alpha everywhere). `rgb16-lossless`
/// is compared with its 16-bit reference rounded to 8 bits (`v × 255 / 65535`): libjxl rounds
/// our `JXL_TYPE_UINT8` output itself, so one level of difference is allowed. The two lossless
/// files in linear sRGB (`alpha-lossless`, `rgb16-lossless`) are decoded without conversion
/// (`convertsToSRGB` false), as djxl writes their samples as stored; `adobergb-d1` is compared
/// with its sRGB reference (`djxl --color_space=RGB_D65_SRG_Rel_SRG`), which libjxl gives us by
/// `JxlDecoderSetPreferredColorProfile`.
@Suite(.enabled(if: Corpus.has("jxl"), Corpus.missing("jxl")), .tags(.cpuBound))
struct JXLConformanceTests {
    static let stills = ["abstract-d3", "adobergb-d1", "alpha-lossless", "alpha-lossy", "cartoon-lossless", "gray-d1",
                         "jpeg-recompressed", "photo-d1", "photo-lossless", "progressive-d1", "rgb16-lossless"]
    static let linear: Set<String> = ["alpha-lossless", "rgb16-lossless"]

    @Test(arguments: stills)
    func straightDecodeMatchesDjxl(_ name: String) throws {
        let data = try Corpus.data(JXLReference.folder, name + ".jxl")
        let options = DecodeOptions(convertsToSRGB: !Self.linear.contains(name), pixelFormat: .rgba8Straight)
        let decoded = try JXLDecoder().decode(data, options: options)
        let reference = try JXLReference(name + ".pam")
        #expect(decoded.bitmap.pixelFormat == .rgba8Straight)
        let (color, alpha) = reference.maxDifference(decoded.bitmap)
        let tolerance = reference.maxValue > 255 ? 1 : 0
        #expect(color <= tolerance && alpha <= tolerance, "\(name): colour differs by \(color), alpha by \(alpha)")
    }

    @Test(arguments: stills)
    func premultipliedDecodeIsTheStraightOnePremultiplied(_ name: String) throws {
        let data = try Corpus.data(JXLReference.folder, name + ".jxl")
        let convert = !Self.linear.contains(name)
        let straight = try JXLDecoder().decode(data, options: DecodeOptions(convertsToSRGB: convert, pixelFormat: .rgba8Straight))
        let premultiplied = try JXLDecoder().decode(data, options: DecodeOptions(convertsToSRGB: convert))
        #expect(premultiplied.bitmap.pixelFormat == .rgba8Premultiplied)
        #expect(premultiplied.bitmap == straight.bitmap.premultiplied())
    }

    @Test func headerInfoWithoutPixels() throws {
        let decoder = JXLDecoder()
        let photo = try decoder.readInfo(Corpus.data(JXLReference.folder, "photo-d1.jxl"))
        #expect(photo.format == .jxl && photo.size == PixelSize(width: 256, height: 192) && !photo.hasAlpha)
        #expect(photo.bitDepth == 8 && photo.componentCount == 3 && photo.frameCount == 1 && photo.colorProfile == nil)

        let jpeg = try decoder.readInfo(Corpus.data(JXLReference.folder, "jpeg-recompressed.jxl"))
        #expect(jpeg.size == PixelSize(width: 200, height: 300) && jpeg.orientation == .right)
        #expect(jpeg.uprightSize == PixelSize(width: 300, height: 200))

        let alpha = try decoder.readInfo(Corpus.data(JXLReference.folder, "alpha-lossy.jxl"))
        #expect(alpha.hasAlpha && alpha.componentCount == 4)

        let deep = try decoder.readInfo(Corpus.data(JXLReference.folder, "rgb16-lossless.jxl"))
        #expect(deep.bitDepth == 16)
        #expect(deep.colorProfile != nil, "linear sRGB is not sRGB: libjxl's profile for it is reported")

        let gray = try decoder.readInfo(Corpus.data(JXLReference.folder, "gray-d1.jxl"))
        #expect(gray.componentCount == 1 && gray.colorProfile == nil)

        let adobe = try decoder.readInfo(Corpus.data(JXLReference.folder, "adobergb-d1.jxl"))
        let profile = try #require(adobe.colorProfile)
        #expect(profile.colorSpace.hasPrefix("RGB") && profile.byteCount == 18604, "\(profile)")

        let animation = try decoder.readInfo(Corpus.data(JXLReference.folder, "anim-moon.jxl"))
        #expect(animation.frameCount == 14 && animation.hasAlpha && animation.size == PixelSize(width: 116, height: 100))
    }

    /// The codestream's orientation 6: applied, the picture is the reference (300×200); kept, it
    /// is the stored 200×300, the reference turned back.
    @Test func orientationAppliedOrKept() throws {
        let data = try Corpus.data(JXLReference.folder, "jpeg-recompressed.jxl")
        let upright = try JXLDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let stored = try JXLDecoder().decode(data, options: DecodeOptions(appliesOrientation: false, pixelFormat: .rgba8Straight)).bitmap
        #expect(upright.size == PixelSize(width: 300, height: 200))
        #expect(stored.size == PixelSize(width: 200, height: 300))
        // Orientation 6 (turn 90° clockwise): stored (x, y) is upright (H − 1 − y, x), H the stored height.
        var mismatches = 0
        for y in 0..<stored.height {
            for x in 0..<stored.width where stored.pixel(x: x, y: y) != upright.pixel(x: stored.height - 1 - y, y: x) {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        // A requested turn is folded with the codestream's: libjxl keeps the orientation and
        // the stored pixels are turned once (6 then a quarter turn: a half turn of the stored).
        var options = DecodeOptions(pixelFormat: .rgba8Straight)
        options.transform = .right
        let turned = try JXLDecoder().decode(data, options: options).bitmap
        #expect(turned == upright.oriented(.right))
        #expect(turned == stored.oriented(.down))
    }

    /// Adobe RGB: converted by libjxl to sRGB (the reference); without conversion, the pixels
    /// come in the space libjxl decodes to by default (linear sRGB, `.linear.pam`) and the
    /// decoded picture carries that space's profile.
    @Test func adobeRGBToSRGBOrLeft() throws {
        let data = try Corpus.data(JXLReference.folder, "adobergb-d1.jxl")
        let left = try JXLDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false, pixelFormat: .rgba8Straight))
        let (color, alpha) = try JXLReference("adobergb-d1.linear.pam").maxDifference(left.bitmap)
        #expect(color == 0 && alpha == 0)
        #expect(left.iccProfile != nil)
        let converted = try JXLDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        #expect(converted.iccProfile == nil)
    }

    /// Linear sRGB lossless: converted by lcms2 through libjxl's profile by default.
    @Test func linearLosslessIsConvertedByDefault() throws {
        let data = try Corpus.data(JXLReference.folder, "alpha-lossless.jxl")
        let stored = try JXLDecoder().decode(data, options: DecodeOptions(convertsToSRGB: false, pixelFormat: .rgba8Straight))
        let converted = try JXLDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        #expect(stored.bitmap != converted.bitmap)
        #expect(stored.iccProfile != nil && converted.iccProfile == nil && converted.warnings.isEmpty)
    }

    @Test func everyFrameOfTheAnimationMatchesDjxl() throws {
        let data = try Corpus.data(JXLReference.folder, "anim-moon.jxl")
        let frames = try JXLDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        let info = frames.animationInfo
        #expect(info.canvasSize == PixelSize(width: 116, height: 100) && info.frameCount == 14)
        #expect(info.loopCount == 0 && info.totalDurationMilliseconds == 2100)
        var index = 0
        while let frame = try frames.nextFrame(size: nil) {
            let reference = try JXLReference(String(format: "anim-moon.f%02d.pam", index))
            #expect(frame.index == index && frame.delayMilliseconds == 150)
            #expect(frame.bitmap == reference.premultipliedBitmap, "frame \(index)")
            index += 1
        }
        #expect(index == 14)
        #expect(try frames.nextFrame(size: nil) == nil)
    }

    @Test func stillDecodeOfTheAnimationIsItsFirstFrame() throws {
        let data = try Corpus.data(JXLReference.folder, "anim-moon.jxl")
        let still = try JXLDecoder().decode(data, options: DecodeOptions(pixelFormat: .rgba8Straight))
        let (color, alpha) = try JXLReference("anim-moon.f00.pam").maxDifference(still.bitmap)
        #expect(color == 0 && alpha == 0)
    }

    @Test func animationLimitsAreCheckedBeforeAnyFrame() throws {
        let data = try Corpus.data(JXLReference.folder, "anim-moon.jxl")
        #expect {
            _ = try JXLDecoder().makeAnimationDecoder(for: data, options: DecodeOptions(maxAnimationFrameCount: 13))
        } throws: { error in
            guard case ImagePipelineError.overLimit(.animationFrames, limit: 13, actual: _) = error else { return false }
            return true
        }
        #expect {
            _ = try JXLDecoder().makeAnimationDecoder(for: data, options: DecodeOptions(maxAnimationPixelCount: 116 * 100 * 13))
        } throws: { error in
            guard case ImagePipelineError.overLimit(.animationPixels, limit: _, actual: _) = error else { return false }
            return true
        }
        #expect(throws: ImagePipelineError.self) {
            _ = try JXLDecoder().makeAnimationDecoder(for: data, options: DecodeOptions(maxPixelCount: 1000))
        }
    }

    @Test func animationFramesScaled() throws {
        let data = try Corpus.data(JXLReference.folder, "anim-moon.jxl")
        let frames = try JXLDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        let frame = try #require(try frames.nextFrame(size: PixelSize(width: 58, height: 50)))
        #expect(frame.bitmap.size == PixelSize(width: 58, height: 50))
    }

    /// A lossy still asked for at an eighth of its size stops at the DC image: libjxl's flush
    /// of it (full size, upsampled) is not the full decode, and resampled to the target it is
    /// close to the full decode resampled. A larger target, or a lossless file, decodes whole.
    /// libjxl 0.7 reports the DC (`JXL_DEC_FRAME_PROGRESSION`) only for a frame of more than one
    /// group (over 256 × 256): the 1024 × 768 picture here, not the corpus's 256 × 192 ones.
    ///
    /// An opaque picture asked for at a smaller size comes back at that size, resampled from
    /// libjxl's RGB output as it leaves the decoder: byte for byte the full-size bitmap the
    /// decoder returns when a crop follows (`cutsAfterScaling`) resampled by the pipeline's
    /// ``Resampler``.
    @Test func smallTargetsStopAtTheDC() throws {
        let size = PixelSize(width: 1024, height: 768)
        var bytes = [UInt8](repeating: 255, count: size.pixelCount * 4)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let i = (y * size.width + x) * 4
                bytes[i] = UInt8((x / 4 + y / 8) % 256)
                bytes[i + 1] = UInt8((x * y / 512) % 256)
                bytes[i + 2] = UInt8(((x - 512) * (x - 512) + (y - 384) * (y - 384)) / 1024 % 256)
            }
        }
        let picture = try #require(Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4, bytes: bytes))
        func decode(_ data: Data, _ target: PixelSize?, cut: Bool = false) throws -> Bitmap {
            var options = DecodeOptions(targetSize: target)
            options.cutsAfterScaling = cut
            return try JXLDecoder().decode(data, options: options).bitmap
        }
        let target = PixelSize(width: 128, height: 96), larger = PixelSize(width: 256, height: 192)
        for lossless in [false, true] {
            let data = try JXLEncoder().encode(picture, options: EncodeOptions(lossless: lossless, effort: 1))
            let full = try decode(data, nil)
            let smallWhole = try decode(data, target, cut: true), largerWhole = try decode(data, larger, cut: true)
            #expect(smallWhole.size == size && largerWhole == full)
            #expect(try decode(data, target) == Resampler.resample(smallWhole, to: target))
            #expect(try decode(data, larger) == Resampler.resample(full, to: larger))
            if lossless {
                #expect(smallWhole == full)
            } else {
                #expect(smallWhole != full, "the DC flush is not the full decode")
                let quality = psnr(Resampler.resample(smallWhole, to: target), Resampler.resample(full, to: target))
                #expect(quality > 30, "PSNR \(quality) dB")
            }
        }
    }

    /// libjxl's own thread runner (``JXLDecoder/threadCount``, ``JXLEncoder/threadCount``) gives
    /// the same pixels as decoding on the calling thread.
    @Test func threadRunnerGivesTheSamePixels() throws {
        for name in ["photo-d1", "alpha-lossless", "anim-moon"] {
            let data = try Corpus.data(JXLReference.folder, name + ".jxl")
            let alone = try JXLDecoder().decode(data, options: DecodeOptions())
            let threaded = try JXLDecoder(threadCount: 2).decode(data, options: DecodeOptions())
            #expect(alone.bitmap == threaded.bitmap, "\(name)")
        }
        let picture = try JXLDecoder().decode(Corpus.data(JXLReference.folder, "photo-lossless.jxl"),
                                              options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap
        let encoded = try JXLEncoder(threadCount: 2).encode(picture, options: EncodeOptions(lossless: true))
        #expect(try JXLDecoder().decode(encoded, options: DecodeOptions(pixelFormat: .rgba8Straight)).bitmap == picture)
    }

    @Test func signatures() throws {
        let decoder = JXLDecoder()
        #expect(decoder.canDecode(try Corpus.data(JXLReference.folder, "photo-d1.jxl")))  // FF 0A
        #expect(decoder.canDecode(try Corpus.data(JXLReference.folder, "jpeg-recompressed.jxl")))  // container
        #expect(!decoder.canDecode(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])))
        #expect(!decoder.canDecode(Data([0xFF, 0xD8, 0xFF, 0xE0])))
    }
}
