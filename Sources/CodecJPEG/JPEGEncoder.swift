import CJPEGShim
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes a `Bitmap` as a JFIF JPEG with libjpeg-turbo.
///
/// Register it where the app writes pictures, e.g.
/// `EncoderRegistry().registering(JPEGEncoder()).registering(PNGEncoder())`; nothing registers
/// it globally.
///
/// Options (`EncodeOptions`):
/// - `quality` 0–100 (libjpeg's scale; 0 is written as 1), default ``quality`` (80).
/// - `progressive`: libjpeg's standard progression script (an SOF2 file); default baseline.
/// - `chromaSubsampling`: 4:2:0 (the default), 4:2:2 or 4:4:4.
/// - `optimizesCoding`: optimal Huffman tables (default `true`; about 5–10% smaller at the
///   same pixels, one more pass over the coefficients). Progressive files always have them.
/// - `lossless: true` throws `EncodingError.invalidOptions(format:message:)`:
///   libjpeg-turbo's lossless mode is not baseline JPEG and most decoders refuse it.
/// - `compressionLevel` and `effort` do not apply and are ignored (`effort` is still range-checked).
///
/// The bitmap is already upright (decoders apply EXIF orientation), so its pixels are written as
/// they are and no EXIF block is written; an ICC profile only when `EncodeOptions.iccProfile`
/// gives one (APP2 segments), else none (the pixels are taken as sRGB).
///
/// A bitmap whose every pixel is gray (R = G = B) is written as a one-component grayscale JPEG
/// (as vips does for black-and-white pictures): the same pixels, no chroma to store or decode.
///
/// **Alpha.** JPEG has none, so the pixels are composited over ``background``, black by default
/// — what vips's `jpegsave` and a browser canvas's `toBlob("image/jpeg")` do. For premultiplied
/// bitmaps that is exactly the stored colour, so their rows go to libjpeg without any copy; use
/// `.white` for documents and logos meant for a white page.
///
/// **Memory.** Rows are read from the bitmap in place (another background, or straight pixels,
/// add one scratch row). With `optimizesCoding: false` libjpeg streams: a few MCU rows plus the
/// output. Optimised tables (the default) and progressive files make libjpeg keep every DCT
/// coefficient for its second pass: about 3 bytes a pixel at 4:2:0 (6 at 4:4:4), e.g. 36 MB for
/// a 12-megapixel picture; turn them off for very large pictures on a tight budget.
public struct JPEGEncoder: ImageEncoding {
    /// The colour transparent pixels are composited over (JPEG stores no alpha): the pipeline's
    /// one colour type, taken as opaque (its alpha is not used).
    public typealias Background = RGBAColor

    /// JPEG's side limit (the SOF fields are 16 bits; libjpeg refuses more than 65,500).
    public static let maximumSide = 65_500

    /// `ImageFormat.jpeg`.
    public var format: ImageFormat { .jpeg }

    /// The quality used when `EncodeOptions.quality` is `nil`. Default 80.
    public var quality: Int

    /// What transparent pixels are composited over. Default `RGBAColor.black`.
    public var background: Background

    /// Creates an encoder with a default quality (0–100; checked when encoding) and background.
    public init(quality: Int = 80, background: Background = .black) {
        self.quality = quality
        self.background = background
    }

    /// The JPEG bytes of `bitmap`, written row by row from its pixels.
    /// - Throws: `EncodingError.invalidOptions(format:message:)` for a quality
    ///   outside 0–100 or `lossless`; `EncodingError.unsupported(format:message:)`
    ///   for an empty bitmap or one wider or taller than ``maximumSide``;
    ///   `EncodingError.failed(format:message:)` with libjpeg's message otherwise.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        try validateCommonOptions(options)
        let quality = options.quality ?? self.quality
        guard (0...100).contains(quality) else {
            throw EncodingError.invalidOptions(format: .jpeg, message: "quality \(quality) is outside 0...100")
        }
        guard !options.lossless else {
            throw EncodingError.invalidOptions(format: .jpeg, message: "JPEG cannot be lossless; use PNG or lossless WebP")
        }
        guard bitmap.width > 0, bitmap.height > 0 else {
            throw EncodingError.unsupported(format: .jpeg, message: "an empty \(bitmap.width)×\(bitmap.height) picture")
        }
        guard bitmap.width <= Self.maximumSide, bitmap.height <= Self.maximumSide else {
            throw EncodingError.unsupported(format: .jpeg, message:
                "\(bitmap.width)×\(bitmap.height) is over JPEG's \(Self.maximumSide) pixels a side")
        }
        var settings = jpegshim_encode_options()
        settings.quality = Int32(max(1, quality))
        settings.progressive = options.progressive ? 1 : 0
        switch options.chromaSubsampling ?? .yuv420 {
        case .yuv420: settings.subsampling = Int32(JPEGSHIM_SUBSAMPLING_420)
        case .yuv422: settings.subsampling = Int32(JPEGSHIM_SUBSAMPLING_422)
        case .yuv444: settings.subsampling = Int32(JPEGSHIM_SUBSAMPLING_444)
        }
        settings.optimize_coding = options.optimizesCoding ? 1 : 0
        settings.straight_alpha = bitmap.pixelFormat == .rgba8Premultiplied ? 0 : 1
        settings.background = (background.red, background.green, background.blue)
        let grayBackground = background.red == background.green && background.green == background.blue
        // An RGB profile describes three components: a gray picture that carries one stays RGB.
        settings.grayscale = options.iccProfile == nil && Self.isGray(bitmap, overGrayBackground: grayBackground) ? 1 : 0
        let icc = try EncodeOptions.checkedICCProfile(options.iccProfile, format: .jpeg) ?? Data()

        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: 256)
        let code = bitmap.withUnsafeBytes { pixels in
            icc.withUnsafeBytes { profile in
                settings.icc = profile.baseAddress?.assumingMemoryBound(to: UInt8.self)
                settings.icc_size = UInt32(profile.count)
                return message.withUnsafeMutableBufferPointer { text in
                    jpegshim_encode_rgba(pixels.baseAddress, UInt32(bitmap.width), UInt32(bitmap.height), bitmap.bytesPerRow,
                                         &settings, &output, &size, text.baseAddress, text.count)
                }
            }
        }
        guard code == Int32(JPEGSHIM_OK), let output else {
            jpegshim_free(output)
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = code == Int32(JPEGSHIM_NO_MEMORY) ? "out of memory" : (text.isEmpty ? "libjpeg could not encode" : text)
            throw EncodingError.failed(format: .jpeg, message: reason)
        }
        // The malloc'd buffer becomes the Data's storage (no copy); Data frees it.
        return Data(bytesNoCopy: output, count: size, deallocator: .free)
    }

    /// Whether every pixel has R = G = B and so does its composite: always over a gray
    /// background, over another only when the pixel is opaque.
    static func isGray(_ bitmap: Bitmap, overGrayBackground: Bool) -> Bool {
        bitmap.withUnsafeBytes { bytes in
            for y in 0..<bitmap.height {
                var i = y * bitmap.bytesPerRow
                let end = i + bitmap.width * 4
                while i < end {
                    if bytes[i] != bytes[i + 1] || bytes[i] != bytes[i + 2] { return false }
                    if !overGrayBackground, bytes[i + 3] != 255 { return false }
                    i += 4
                }
            }
            return true
        }
    }
}
