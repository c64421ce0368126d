import CHEIF
import LazyLibraries
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes a `Bitmap` as HEIC (HEVC, libheif's x265 plugin) or AVIF (AV1,
/// libheif's aom plugin), written to memory with `heif_context_write`.
///
/// - **Quality** (`EncodeOptions.quality`, 0–100, default ``defaultQuality``
///   = 50) goes to `heif_encoder_set_lossy_quality`; 50 is vips's `heifsave` default and
///   libheif's (`heif-enc`). For AV1, libheif turns it into a constant-quality level
///   `cq-level = round((100 − quality) × 63 / 100)` (quality 50 → 32).
/// - **Lossless** (`EncodeOptions.lossless`): libheif's lossless mode with
///   4:4:4 and RGB stored as such (identity matrix, `matrix_coefficients` 0) and a lossless
///   alpha plane: every byte comes back, colour under fully transparent pixels included.
///   (Asking for lossless with other than 4:4:4 subsampling is an error.)
/// - **Chroma** (`EncodeOptions.chromaSubsampling`, default 4:2:0 at every
///   quality; vips switches to 4:4:4 from Q 90): the encoders' `chroma` parameter. Lossy pictures are stored as full-range BT.601 YCbCr
///   with sRGB primaries and transfer in an `nclx` box, as `heif-enc` and vips write them.
/// - **Effort** (`EncodeOptions.effort`, 0–6, default 4): for AV1 the encoder's
///   `speed` = 9 − effort (so the default is speed 5, what vips's `heifsave` uses by default);
///   for HEVC x265's `preset`: ultrafast, veryfast, fast, medium, slow (the default, libheif's
///   own), slower, veryslow.
/// - **Alpha**: a bitmap with a pixel that is not opaque is handed over as straight,
///   interleaved RGBA and libheif stores an alpha plane beside the colour (lossless in
///   lossless mode); an opaque one as RGB, without an alpha plane.
///
/// No EXIF, XMP or thumbnail is written; `EncodeOptions.iccProfile` becomes a `colr` box of
/// type `prof` beside the sRGB `nclx` one. Neither encoder writes to stderr: libheif's x265
/// plugin keeps x265 at `X265_LOG_NONE` unless a logging level is set (this encoder sets none),
/// and libheif's libaom plugin hands libaom no logger; a test captures fd 2 to check.
///
/// When this libheif was built without the encoder, ``encode(_:options:)`` throws
/// `EncodingError.unsupported(format:message:)`; ``isAvailable`` says so
/// beforehand. Encoding is slow next to decoding (x265 and libaom work hard on each block),
/// so keep it off latency-critical threads.
public struct HEIFEncoder: ImageEncoding {
    /// The compression inside the HEIF container.
    public enum Codec: String, Sendable, Hashable, CaseIterable {
        /// HEVC (H.265) in HEIC, through x265.
        case hevc
        /// AV1 in AVIF, through libaom.
        case av1
    }

    /// The quality used when `EncodeOptions.quality` is `nil`: 50, vips's and libheif's default.
    public static let defaultQuality = 50
    /// The effort used when `EncodeOptions.effort` is `nil`: 4 (AV1 speed 5, x265 preset "slow").
    public static let defaultEffort = 4

    /// The codec this encoder writes with.
    public let codec: Codec
    /// `ImageFormat.heif` for HEVC, `ImageFormat.avif` for AV1.
    public let format: ImageFormat
    /// libheif's `heif_compression_format`, as its raw value.
    let compression: UInt32

    /// An encoder writing `codec` (HEIC by default).
    public init(codec: Codec = .hevc) {
        self.codec = codec
        switch codec {
        case .hevc: (format, compression) = (.heif, heif_compression_HEVC.rawValue)
        case .av1: (format, compression) = (.avif, heif_compression_AV1.rawValue)
        }
    }

    /// An encoder for an arbitrary libheif compression format (tests use one libheif has no
    /// encoder for); effort goes nowhere.
    init(format: ImageFormat, compression: heif_compression_format, codec: Codec) {
        self.codec = codec
        self.format = format
        self.compression = compression.rawValue
    }

    /// An encoder writing HEIC (HEVC).
    public static var heic: HEIFEncoder { HEIFEncoder(codec: .hevc) }
    /// An encoder writing AVIF (AV1).
    public static var avif: HEIFEncoder { HEIFEncoder(codec: .av1) }

    private var compressionFormat: heif_compression_format { heif_compression_format(rawValue: compression) }

    /// Whether this libheif has an encoder for the codec (`heif_have_encoder_for_format`);
    /// `false` when libheif is not installed. Asking opens libheif.
    public var isAvailable: Bool {
        (try? LazyLibrary.heif.load()) != nil && HEIFLibrary.initialized && heif_have_encoder_for_format(compressionFormat) != 0
    }

    /// Whether an encode has finished in this process. x265 sets up its shared tables the first
    /// time an encoder opens, and two first encodes at once can race there (a call through a null
    /// function pointer inside libx265, seen once in nine runs of the HEIF suites): the first
    /// encode runs alone, every later one freely.
    private static let firstEncodeDone = Mutex<Bool>(false)

    /// Runs `body` under the lock until an encode has finished once.
    private static func firstEncodeAlone(_ body: () throws -> Void) throws {
        if firstEncodeDone.withLock({ $0 }) { return try body() }
        try firstEncodeDone.withLock { done in
            try body()
            done = true
        }
    }

    /// The HEIC or AVIF bytes of `bitmap`.
    /// - Throws: `EncodingError.unsupported(format:message:)` when libheif has
    ///   no encoder for the codec (or none that is lossless, when asked);
    ///   `EncodingError.invalidOptions(format:message:)` for quality or effort
    ///   out of range, or lossless with chroma other than 4:4:4;
    ///   `EncodingError.failed(format:message:)` with libheif's message;
    ///   `EncodingError.libraryUnavailable(format:_:)` when libheif is not installed.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        try validateOptions(options)
        return try encode(straight: bitmap.unpremultipliedBytes(), size: bitmap.size, options: options)
    }

    /// Encodes straight RGBA (tightly packed, `size.pixelCount × 4` bytes) with `options`: what
    /// ``encode(_:options:)`` does after dividing alpha out, reachable by tests with colour
    /// under transparent pixels, which a premultiplied bitmap cannot hold.
    func encode(straight: [UInt8], size: PixelSize, options: EncodeOptions) throws -> Data {
        try validateOptions(options)
        guard size.isValid, straight.count == size.pixelCount * 4 else {
            throw EncodingError.failed(format: format, message: "\(straight.count) bytes are not \(size.width)×\(size.height) RGBA pixels")
        }
        do { try LazyLibrary.heif.load() } catch { throw EncodingError.libraryUnavailable(format: format, error) }
        guard HEIFLibrary.initialized else { throw EncodingError.unsupported(format: format, message: "libheif failed to initialise") }
        guard heif_have_encoder_for_format(compressionFormat) != 0 else {
            throw EncodingError.unsupported(format: format, message: "libheif \(Self.libheifVersion) has no \(codecName) encoder")
        }
        if options.lossless, !supportsLossless {
            throw EncodingError.unsupported(format: format, message: "libheif's \(codecName) encoder is not lossless")
        }

        guard let context = heif_context_alloc() else { throw EncodingError.failed(format: format, message: "heif_context_alloc failed") }
        defer { heif_context_free(context) }
        var encoderPointer: OpaquePointer?
        try check(heif_context_get_encoder_for_format(context, compressionFormat, &encoderPointer), "choosing the encoder")
        guard let encoder = encoderPointer else { throw EncodingError.unsupported(format: format, message: "libheif returned no encoder") }
        defer { heif_encoder_release(encoder) }
        try configure(encoder, options)

        let image = try makeImage(straight, size: size, alpha: !StraightRGBA.isOpaque(straight))
        defer { heif_image_release(image) }
        guard let nclx = heif_nclx_color_profile_alloc() else { throw EncodingError.failed(format: format, message: "heif_nclx_color_profile_alloc failed") }
        defer { heif_nclx_color_profile_free(nclx) }
        _ = heif_nclx_color_profile_set_color_primaries(nclx, 1)  // BT.709 = sRGB primaries
        _ = heif_nclx_color_profile_set_transfer_characteristics(nclx, 13)  // sRGB
        _ = heif_nclx_color_profile_set_matrix_coefficients(nclx, options.lossless ? 0 : 6)  // identity (RGB) or BT.601
        nclx.pointee.full_range_flag = 1
        try check(heif_image_set_nclx_color_profile(image, nclx), "describing the colours")
        if let icc = try EncodeOptions.checkedICCProfile(options.iccProfile, format: format) {
            // A second `colr` box, of type `prof`: the ICC profile readers convert from.
            try icc.withUnsafeBytes { profile in
                try check(heif_image_set_raw_color_profile(image, "prof", profile.baseAddress, profile.count), "embedding the ICC profile")
            }
        }

        guard let encoding = heif_encoding_options_alloc() else { throw EncodingError.failed(format: format, message: "heif_encoding_options_alloc failed") }
        defer { heif_encoding_options_free(encoding) }
        encoding.pointee.save_alpha_channel = 1
        if encoding.pointee.version >= 4 { encoding.pointee.output_nclx_profile = nclx }

        var handle: OpaquePointer?
        try Self.firstEncodeAlone {
            try check(heif_context_encode_image(context, image, encoder, encoding, &handle), "encoding")
        }
        if let handle { heif_image_handle_release(handle) }

        let output = Output()
        var writer = heif_writer()
        writer.writer_api_version = 1
        writer.write = { _, bytes, count, userdata in
            guard let userdata else { return Dav1dPlugin.failure(heif_error_Usage_error, "no output") }
            let output = Unmanaged<Output>.fromOpaque(userdata).takeUnretainedValue()
            if let bytes, count > 0 { output.data.append(bytes.assumingMemoryBound(to: UInt8.self), count: count) }
            return DecoderPlugin.success
        }
        let written = withExtendedLifetime(output) {
            heif_context_write(context, &writer, Unmanaged.passUnretained(output).toOpaque())
        }
        try check(written, "writing the file")
        guard !output.data.isEmpty else { throw EncodingError.failed(format: format, message: "libheif wrote nothing") }
        return output.data
    }

    /// Quality and effort in range; lossless only with 4:4:4.
    private func validateOptions(_ options: EncodeOptions) throws {
        try validateCommonOptions(options)
        if options.lossless, let chroma = options.chromaSubsampling, chroma != .yuv444 {
            throw EncodingError.invalidOptions(format: format, message: "lossless needs 4:4:4, not \(chroma.rawValue)")
        }
    }

    /// The bytes `heif_context_write` hands over.
    private final class Output {
        var data = Data()
    }

    /// "x265"/"aom" style name for messages.
    private var codecName: String {
        switch compressionFormat {
        case heif_compression_HEVC: return "HEVC"
        case heif_compression_AV1: return "AV1"
        default: return "compression-\(compression)"
        }
    }

    static var libheifVersion: String { String(cString: heif_get_version()) }

    /// Whether the encoder libheif would pick declares lossless support.
    private var supportsLossless: Bool {
        var descriptor: OpaquePointer?
        guard heif_get_encoder_descriptors(compressionFormat, nil, &descriptor, 1) == 1, let descriptor else { return false }
        return heif_encoder_descriptor_supports_lossless_compression(descriptor) != 0
    }

    /// Quality or lossless, chroma and effort.
    private func configure(_ encoder: OpaquePointer, _ options: EncodeOptions) throws {
        // No heif_encoder_set_logging_level: libheif's x265 plugin starts at X265_LOG_NONE, and
        // its level 0 would be X265_LOG_ERROR (x265 printing its errors to stderr).
        if options.lossless {
            try check(heif_encoder_set_lossless(encoder, 1), "switching to lossless")
        } else {
            try check(heif_encoder_set_lossy_quality(encoder, Int32(options.quality ?? Self.defaultQuality)), "setting the quality")
        }
        let chroma: ChromaSubsampling = options.lossless ? .yuv444 : options.chromaSubsampling ?? .yuv420
        let chromaValue: String
        switch chroma {
        case .yuv420: chromaValue = "420"
        case .yuv422: chromaValue = "422"
        case .yuv444: chromaValue = "444"
        }
        try setParameter(encoder, "chroma", optional: false) { heif_encoder_set_parameter_string(encoder, "chroma", chromaValue) }
        let effort = options.effort ?? Self.defaultEffort
        switch compressionFormat {
        case heif_compression_AV1:
            try setParameter(encoder, "speed", optional: true) { heif_encoder_set_parameter_integer(encoder, "speed", Int32(9 - effort)) }
            if options.lossless {
                try setParameter(encoder, "lossless-alpha", optional: true) { heif_encoder_set_parameter_boolean(encoder, "lossless-alpha", 1) }
            }
        case heif_compression_HEVC:
            let presets = ["ultrafast", "veryfast", "fast", "medium", "slow", "slower", "veryslow"]
            let preset = presets[max(0, min(presets.count - 1, effort))]
            try setParameter(encoder, "preset", optional: true) { heif_encoder_set_parameter_string(encoder, "preset", preset) }
        default:
            break
        }
    }

    /// Sets one encoder parameter; a parameter this encoder plugin does not have is skipped
    /// when `optional` (another plugin for the same codec may call its speed differently).
    private func setParameter(_ encoder: OpaquePointer, _ name: String, optional: Bool, _ set: () -> heif_error) throws {
        let error = set()
        guard error.code != heif_error_Ok else { return }
        if optional, error.subcode == heif_suberror_Unsupported_parameter { return }
        let detail = error.message.map { HEIFLibrary.text($0) } ?? "error \(error.code.rawValue)"
        if error.subcode == heif_suberror_Unsupported_parameter || error.subcode == heif_suberror_Invalid_parameter_value {
            throw EncodingError.invalidOptions(format: format, message: "the \(codecName) encoder refused \(name): \(detail)")
        }
        throw EncodingError.failed(format: format, message: "libheif failed setting \(name): \(detail)")
    }

    /// A `heif_image` holding `rgba` (straight, tightly packed) as interleaved RGBA, or RGB
    /// when `alpha` is false. The caller releases it.
    private func makeImage(_ rgba: [UInt8], size: PixelSize, alpha: Bool) throws -> OpaquePointer {
        var created: OpaquePointer?
        try check(heif_image_create(Int32(clamping: size.width), Int32(clamping: size.height), heif_colorspace_RGB,
                                    alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, &created), "creating the image")
        guard let image = created else { throw EncodingError.failed(format: format, message: "libheif returned no image") }
        do {
            try check(heif_image_add_plane(image, heif_channel_interleaved, Int32(clamping: size.width),
                                           Int32(clamping: size.height), 8), "allocating the pixels")
            var stride: Int32 = 0
            let channels = alpha ? 4 : 3
            guard let plane = heif_image_get_plane(image, heif_channel_interleaved, &stride), Int(stride) >= size.width * channels else {
                throw EncodingError.failed(format: format, message: "libheif returned no pixel plane")
            }
            rgba.withUnsafeBufferPointer { source in
                guard let base = source.baseAddress, source.count >= size.pixelCount * 4 else { return }
                for y in 0..<size.height {
                    let row = plane + y * Int(stride), from = y * size.width * 4
                    if alpha {
                        row.update(from: base + from, count: size.width * 4)
                    } else {
                        for x in 0..<size.width {
                            row[x * 3] = source[from + x * 4]
                            row[x * 3 + 1] = source[from + x * 4 + 1]
                            row[x * 3 + 2] = source[from + x * 4 + 2]
                        }
                    }
                }
            }
            return image
        } catch {
            heif_image_release(image)
            throw error
        }
    }

    /// `heif_error` → ``PipelineCore/EncodingError``: `.unsupported` for libheif's
    /// "unsupported" codes, `.failed` with libheif's message otherwise.
    private func check(_ error: heif_error, _ step: String) throws {
        guard error.code != heif_error_Ok else { return }
        let message = "libheif failed \(step): " + (error.message.map { HEIFLibrary.text($0) } ?? "error \(error.code.rawValue)")
        if error.code == heif_error_Unsupported_feature || error.code == heif_error_Unsupported_filetype {
            throw EncodingError.unsupported(format: format, message: message)
        }
        throw EncodingError.failed(format: format, message: message)
    }
}
