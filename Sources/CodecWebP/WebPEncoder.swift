import CWebP
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes a `Bitmap` as a still WebP with libwebp's advanced API
/// (`WebPConfig`, `WebPPicture`, `WebPEncode` into a `WebPMemoryWriter`).
///
/// - **Lossy** (the default): VP8 at `EncodeOptions.quality` (0–100, default
///   ``defaultQuality``), always 4:2:0; alpha, when some pixel is not opaque, is stored
///   losslessly beside it (libwebp's `alpha_quality` 100, as `cwebp` and vips do).
/// - **Lossless** (`EncodeOptions.lossless`): VP8L with `exact`, so even the
///   colour of fully transparent pixels survives and decoding gives back every byte.
///
/// `EncodeOptions.effort` (0–6, default 4) is libwebp's `method`. The pixels
/// written are straight RGBA (`Bitmap.unpremultipliedBytes()`); a bitmap whose
/// pixels are all opaque is imported as RGB, so the file has no alpha chunk. No EXIF or XMP is
/// written; `EncodeOptions.iccProfile` goes into an `ICCP` chunk (libwebpmux). Register it with `EncoderRegistry.registering(_:)`.
public struct WebPEncoder: ImageEncoding {
    /// The quality used when `EncodeOptions.quality` is `nil`: 80 (the value
    /// `EncodeOptions` documents; libwebp's, `cwebp`'s and vips's own default is 75).
    public static let defaultQuality = 80
    /// The `method` used when `EncodeOptions.effort` is `nil`: 4, libwebp's and vips's default.
    public static let defaultEffort = 4

    /// Creates a WebP encoder. It holds no state; one value serves every thread.
    public init() {}

    /// `ImageFormat.webp`.
    public var format: ImageFormat { .webp }

    /// The WebP bytes of `bitmap`.
    /// - Throws: `EncodingError.invalidOptions(format:message:)` for quality or
    ///   effort out of range, or chroma subsampling other than 4:2:0 for a lossy encode;
    ///   `EncodingError.failed(format:message:)` with libwebp's error
    ///   (`WebPPicture.error_code`), e.g. for a side over 16383 pixels.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        try encode(straight: bitmap.unpremultipliedBytes(), size: bitmap.size, options: options)
    }

    /// Encodes straight RGBA (tightly packed, `size.pixelCount × 4` bytes) with `options`: what
    /// ``encode(_:options:)`` does after dividing alpha out, reachable by tests with colour
    /// under transparent pixels, which a premultiplied bitmap cannot hold.
    func encode(straight: [UInt8], size: PixelSize, options: EncodeOptions) throws -> Data {
        var config = try configuration(options)
        let icc = try EncodeOptions.checkedICCProfile(options.iccProfile, format: .webp)
        let file = try encode(straight: straight, size: size, config: &config, lossless: options.lossless)
        return try icc.map { try Self.embedding($0, in: file) } ?? file
    }

    /// `file` with `icc` in an `ICCP` chunk (the extended `VP8X` layout), by libwebpmux.
    static func embedding(_ icc: Data, in file: Data) throws -> Data {
        try file.withUnsafeBytes { (fileBytes: UnsafeRawBufferPointer) throws -> Data in
            try icc.withUnsafeBytes { (profile: UnsafeRawBufferPointer) throws -> Data in
                var image = WebPData(bytes: fileBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), size: fileBytes.count)
                var chunk = WebPData(bytes: profile.baseAddress?.assumingMemoryBound(to: UInt8.self), size: profile.count)
                guard let mux = WebPMuxCreate(&image, 0) else {
                    throw EncodingError.failed(format: .webp, message: "libwebpmux could not read the encoded picture")
                }
                defer { WebPMuxDelete(mux) }
                var assembled = WebPData()
                defer { WebPDataClear(&assembled) }
                guard WebPMuxSetChunk(mux, "ICCP", &chunk, 0) == WEBP_MUX_OK, WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK,
                      let bytes = assembled.bytes else {
                    throw EncodingError.failed(format: .webp, message: "libwebpmux could not embed the ICC profile")
                }
                return Data(bytes: bytes, count: assembled.size)
            }
        }
    }

    /// libwebp's configuration for `options`, validated.
    func configuration(_ options: EncodeOptions) throws -> WebPConfig {
        try validateCommonOptions(options)
        if !options.lossless, let chroma = options.chromaSubsampling, chroma != .yuv420 {
            throw EncodingError.invalidOptions(format: .webp, message: "lossy WebP is always 4:2:0, not \(chroma.rawValue) (lossless keeps full colour)")
        }
        var config = WebPConfig()
        guard WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, Float(options.quality ?? Self.defaultQuality)) != 0 else {
            throw EncodingError.failed(format: .webp, message: "libwebp \(Self.version) refused its own default configuration")
        }
        config.method = Int32(options.effort ?? Self.defaultEffort)
        if options.lossless {
            config.lossless = 1
            config.exact = 1
            config.quality = 75  // for VP8L this is effort, not fidelity: libwebp's and cwebp's default
        }
        guard WebPValidateConfig(&config) != 0 else {
            throw EncodingError.invalidOptions(format: .webp, message: "libwebp rejected the configuration")
        }
        return config
    }

    /// Encodes straight, tightly packed RGBA with `config`.
    private func encode(straight: [UInt8], size: PixelSize, config: inout WebPConfig, lossless: Bool) throws -> Data {
        guard size.isValid, straight.count == size.pixelCount * 4 else {
            throw EncodingError.failed(format: .webp, message: "\(straight.count) bytes are not \(size.width)×\(size.height) RGBA pixels")
        }
        let opaque = StraightRGBA.isOpaque(straight)
        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else {
            throw EncodingError.failed(format: .webp, message: "libwebp \(Self.version) does not match the headers it was built with")
        }
        defer { WebPPictureFree(&picture) }
        picture.use_argb = lossless ? 1 : 0
        picture.width = Int32(clamping: size.width)
        picture.height = Int32(clamping: size.height)

        let writer = UnsafeMutablePointer<WebPMemoryWriter>.allocate(capacity: 1)
        writer.initialize(to: WebPMemoryWriter())
        WebPMemoryWriterInit(writer)
        defer {
            WebPMemoryWriterClear(writer)
            writer.deinitialize(count: 1)
            writer.deallocate()
        }
        picture.writer = WebPMemoryWrite
        picture.custom_ptr = UnsafeMutableRawPointer(writer)

        let imported: Int32
        if size.width > Int(WEBP_MAX_DIMENSION) || size.height > Int(WEBP_MAX_DIMENSION) {
            imported = 1  // WebPEncode reports VP8_ENC_ERROR_BAD_DIMENSION without importing pixels
        } else if opaque {
            let rgb = StraightRGBA.droppingAlpha(straight)
            imported = rgb.withUnsafeBufferPointer { WebPPictureImportRGB(&picture, $0.baseAddress, Int32(size.width * 3)) }
        } else {
            imported = straight.withUnsafeBufferPointer { WebPPictureImportRGBA(&picture, $0.baseAddress, Int32(size.width * 4)) }
        }
        guard imported != 0, WebPEncode(&config, &picture) != 0 else {
            throw EncodingError.failed(format: .webp, message: Self.message(picture.error_code, size))
        }
        guard let bytes = writer.pointee.mem, writer.pointee.size > 0 else {
            throw EncodingError.failed(format: .webp, message: "libwebp wrote nothing")
        }
        return Data(bytes: bytes, count: writer.pointee.size)
    }

    /// libwebp's version, "1.2.4".
    static var version: String {
        let packed = WebPGetEncoderVersion()
        return "\(packed >> 16).\((packed >> 8) & 0xFF).\(packed & 0xFF)"
    }

    /// A sentence for libwebp's `WebPEncodingError`.
    static func message(_ code: WebPEncodingError, _ size: PixelSize) -> String {
        let text: String
        switch code {
        case VP8_ENC_ERROR_OUT_OF_MEMORY: text = "out of memory"
        case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: text = "out of memory while writing the bitstream"
        case VP8_ENC_ERROR_NULL_PARAMETER: text = "a parameter is missing"
        case VP8_ENC_ERROR_INVALID_CONFIGURATION: text = "the configuration is invalid"
        case VP8_ENC_ERROR_BAD_DIMENSION:
            text = "\(size.width)×\(size.height) is outside WebP's 1…\(WEBP_MAX_DIMENSION) pixels a side"
        case VP8_ENC_ERROR_PARTITION0_OVERFLOW: text = "the first partition is over 512 KiB (try a lower quality)"
        case VP8_ENC_ERROR_PARTITION_OVERFLOW: text = "a partition is over 16 MiB"
        case VP8_ENC_ERROR_BAD_WRITE: text = "the output could not be written"
        case VP8_ENC_ERROR_FILE_TOO_BIG: text = "the file would be over 4 GiB"
        case VP8_ENC_ERROR_USER_ABORT: text = "aborted"
        default: text = "error \(code.rawValue)"
        }
        return "libwebp: " + text
    }
}
