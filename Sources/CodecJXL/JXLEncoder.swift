import CJXL
import LazyLibraries
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Encodes a `Bitmap` as a still JPEG XL (a bare codestream) with libjxl 0.7.
///
/// - **Lossy** (the default): VarDCT in XYB at the Butteraugli distance `cjxl` gives
///   `EncodeOptions.quality` (``distance(quality:)``: 90 → 1.0, visually lossless; the default
///   ``defaultQuality`` 80 → 1.9). Quality 100 is distance 0.1, still lossy.
/// - **Lossless** (`EncodeOptions.lossless`): modular, mathematically lossless: decoding
///   gives back every byte, the colour of fully transparent pixels included.
///
/// `EncodeOptions.effort` 0–6 maps onto libjxl's effort 1–9 (``libjxlEffort(_:)``; `nil` is
/// libjxl's default, 7). The pixels written are straight RGBA (`Bitmap.unpremultipliedBytes()`);
/// a bitmap whose pixels are all opaque is written as RGB, with no alpha channel. The colour
/// space is sRGB, or `EncodeOptions.iccProfile` when given (stored in the codestream); no EXIF
/// or XMP is written. Register it with `EncoderRegistry.registering(_:)`.
public struct JXLEncoder: ImageEncoding {
    /// The quality used when `EncodeOptions.quality` is `nil`: 80 (distance 1.9), the value
    /// `EncodeOptions` documents for lossy encoders (`cjxl`'s own default is distance 1, quality 90).
    public static let defaultQuality = 80
    /// libjxl's effort when `EncodeOptions.effort` is `nil`: 7, libjxl's and `cjxl`'s default.
    public static let defaultEffort = 7

    /// libjxl's worker threads per encode; 0 encodes on the calling thread.
    public let threadCount: Int

    /// Creates a JPEG XL encoder. It holds no state; one value serves every thread.
    public init(threadCount: Int = 0) { self.threadCount = max(0, threadCount) }

    /// `ImageFormat.jxl`.
    public var format: ImageFormat { .jxl }

    /// `cjxl` 0.7's mapping from quality to distance: `0.1 + (100 − q) × 0.09` from 30 up
    /// (100 → 0.1, 90 → 1.0, 80 → 1.9, 30 → 6.4), `6.4 + 2.5^((30 − q) / 5) / 6.25` below
    /// (10 → 12.65), at most 25, the largest distance libjxl 0.7 takes (from quality 3 down).
    public static func distance(quality: Int) -> Float {
        let q = Double(min(100, max(0, quality)))
        return Float(min(25, q >= 30 ? 0.1 + (100 - q) * 0.09 : 6.4 + pow(2.5, (30 - q) / 5) / 6.25))
    }

    /// `EncodeOptions.effort` (0–6) as libjxl's effort (1–9): 1, 2, 3, 5, 7, 8, 9.
    public static func libjxlEffort(_ effort: Int?) -> Int {
        guard let effort else { return defaultEffort }
        return [1, 2, 3, 5, 7, 8, 9][min(6, max(0, effort))]
    }

    /// The JPEG XL bytes of `bitmap`.
    /// - Throws: `EncodingError.invalidOptions(format:message:)` for quality or effort out of
    ///   range or an ICC profile out of size; `EncodingError.failed(format:message:)` with
    ///   libjxl's error otherwise.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        try validateCommonOptions(options)
        let icc = try EncodeOptions.checkedICCProfile(options.iccProfile, format: .jxl)
        let straight = bitmap.unpremultipliedBytes()
        let opaque = StraightRGBA.isOpaque(straight)
        let pixels = opaque ? StraightRGBA.droppingAlpha(straight) : straight
        let session = try Session(threads: threadCount)
        return try session.encode(pixels, size: bitmap.size, alpha: !opaque, icc: icc, options: options)
    }

    /// One `JxlEncoder` and its runner, destroyed in `deinit` (every path out of an encode).
    private final class Session {
        let encoder: OpaquePointer
        private let runner: UnsafeMutableRawPointer?

        init(threads: Int) throws {
            do { try LazyLibrary.jxl.load() } catch { throw EncodingError.libraryUnavailable(format: .jxl, error) }
            guard let encoder = JxlEncoderCreate(nil) else {
                throw EncodingError.failed(format: .jxl, message: "libjxl could not create an encoder (out of memory)")
            }
            self.encoder = encoder
            runner = threads > 0 ? JxlThreadParallelRunnerCreate(nil, threads) : nil
            if let runner, JxlEncoderSetParallelRunner(encoder, JxlThreadParallelRunner, runner) != JXL_ENC_SUCCESS {
                throw EncodingError.failed(format: .jxl, message: "libjxl refused its own thread runner")
            }
        }

        deinit {
            JxlEncoderDestroy(encoder)
            if let runner { JxlThreadParallelRunnerDestroy(runner) }
        }

        /// Tightly packed RGB (`alpha` false) or RGBA pixels of `size`.
        func encode(_ pixels: [UInt8], size: PixelSize, alpha: Bool, icc: Data?, options: EncodeOptions) throws -> Data {
            guard size.isValid, size.width <= Int(UInt32.max), size.height <= Int(UInt32.max) else {
                throw EncodingError.failed(format: .jxl, message: "\(size) is not a picture size")
            }
            var basic = JxlBasicInfo()
            JxlEncoderInitBasicInfo(&basic)
            basic.xsize = UInt32(size.width)
            basic.ysize = UInt32(size.height)
            basic.bits_per_sample = 8
            basic.exponent_bits_per_sample = 0
            basic.num_color_channels = 3
            basic.alpha_bits = alpha ? 8 : 0
            basic.num_extra_channels = alpha ? 1 : 0
            basic.uses_original_profile = options.lossless ? 1 : 0
            if size.width > 262_144 || size.height > 262_144 || size.pixelCount > 1 << 28 {
                _ = JxlEncoderSetCodestreamLevel(encoder, 10)  // past level 5's limits
            }
            try check(JxlEncoderSetBasicInfo(encoder, &basic), "the picture's basic info (\(size))")
            if let icc {
                try icc.withUnsafeBytes { raw in
                    try check(JxlEncoderSetICCProfile(encoder, raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count),
                              "the ICC profile (\(icc.count) bytes)")
                }
            } else {
                var encoding = JxlColorEncoding()
                JxlColorEncodingSetToSRGB(&encoding, 0)
                try check(JxlEncoderSetColorEncoding(encoder, &encoding), "the sRGB colour encoding")
            }
            guard let settings = JxlEncoderFrameSettingsCreate(encoder, nil) else {
                throw EncodingError.failed(format: .jxl, message: "libjxl could not create frame settings")
            }
            try check(JxlEncoderFrameSettingsSetOption(settings, JXL_ENC_FRAME_SETTING_EFFORT,
                                                       Int64(JXLEncoder.libjxlEffort(options.effort))), "the effort")
            if options.lossless {
                try check(JxlEncoderSetFrameLossless(settings, 1), "lossless mode")
            } else {
                try check(JxlEncoderSetFrameDistance(settings, JXLEncoder.distance(quality: options.quality ?? JXLEncoder.defaultQuality)),
                          "the distance")
            }
            var format = JxlPixelFormat(num_channels: alpha ? 4 : 3, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
            try pixels.withUnsafeBytes { raw in
                try check(JxlEncoderAddImageFrame(settings, &format, raw.baseAddress, raw.count), "the pixels")
            }
            JxlEncoderCloseInput(encoder)
            return try output()
        }

        /// Runs the encoder, growing the output buffer as libjxl asks.
        private func output() throws -> Data {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var written = 0
            while true {
                let status: JxlEncoderStatus = buffer.withUnsafeMutableBufferPointer { out in
                    guard let base = out.baseAddress else { return JXL_ENC_ERROR }
                    var next: UnsafeMutablePointer<UInt8>? = base + written
                    var available = out.count - written
                    let status = JxlEncoderProcessOutput(encoder, &next, &available)
                    written = out.count - available
                    return status
                }
                switch status {
                case JXL_ENC_SUCCESS:
                    return Data(buffer[0..<written])
                case JXL_ENC_NEED_MORE_OUTPUT:
                    buffer.append(contentsOf: repeatElement(0, count: buffer.count))
                default:
                    throw EncodingError.failed(format: .jxl, message: "libjxl could not encode: \(message(JxlEncoderGetError(encoder)))")
                }
            }
        }

        private func check(_ status: JxlEncoderStatus, _ what: String) throws {
            guard status == JXL_ENC_SUCCESS else {
                throw EncodingError.failed(format: .jxl, message: "libjxl refused \(what): \(message(JxlEncoderGetError(encoder)))")
            }
        }

        private func message(_ error: JxlEncoderError) -> String {
            switch error {
            case JXL_ENC_ERR_OOM: "out of memory"
            case JXL_ENC_ERR_BAD_INPUT: "bad input"
            case JXL_ENC_ERR_NOT_SUPPORTED: "not supported"
            case JXL_ENC_ERR_API_USAGE: "API misuse"
            default: "error \(error.rawValue)"
            }
        }
    }
}
