import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Which format a response is written in, and how: the rule of ``Renderer``.
///
/// 1. The format the URL names (``OutputChoice/explicit``), when an encoder for it is registered
///    (else 400).
/// 2. Else the first the client accepts (``OutputChoice/accepted``) and this machine encodes:
///    AVIF, then WebP, then JPEG XL — except that an animation that will stay animated prefers
///    WebP (it animates; our AVIF does not) before AVIF.
/// 3. Else the source's format when we encode it and it suits the web: JPEG, PNG, WebP, AVIF,
///    JPEG XL, and GIF when it stays animated.
/// 4. Else PNG when the picture keeps alpha, JPEG when it does not (a HEIC, an SVG, a still
///    GIF, a BMP).
struct OutputNegotiation: Sendable {
    /// Formats with an encoder that works on this machine (an AVIF encoder is registered even
    /// when libheif lacks libaom: a probe encode at start-up tells).
    let encodable: Set<ImageFormat>
    /// Those of ``encodable`` that write animations.
    let animatable: Set<ImageFormat>

    /// JPEG XL as CodecJXL names it, with its MIME type (this module does not link the codec):
    /// the one value the URL grammar, the negotiation and `Accept` use.
    static let jxl = ImageFormat("jxl", mimeType: "image/jxl", fileExtension: "jxl")

    /// A negotiation over formats known to work (tests).
    init(encodable: Set<ImageFormat>, animatable: Set<ImageFormat>) {
        self.encodable = encodable
        self.animatable = animatable
    }

    /// Probes every format of `encoders` that a response may be negotiated to, once.
    init(encoders: EncoderRegistry) {
        var encodable = Set<ImageFormat>()
        for format in encoders.formats {
            guard let encoder = encoders.encoder(for: format) else { continue }
            // A 16 × 16 transparent picture: an encoder that cannot run here (libheif without
            // libaom) throws, and the format is never negotiated to.
            let probe = Bitmap(zeroed: PixelSize(width: 16, height: 16), pixelFormat: .rgba8Straight)
            guard (try? encoder.encode(probe, options: EncodeOptions(effort: 0))) != nil else { continue }
            encodable.insert(format)
        }
        self.encodable = encodable
        animatable = encodable.filter { encoders.animationEncoder(for: $0) != nil }
    }

    /// The format of a response (the rule above). `animates`: the picture will be written as an
    /// animation where the format can; `hasAlpha`: it keeps transparency.
    /// - Throws: ``ServerError`` 400 when the URL names a format no encoder writes here.
    func format(for choice: OutputChoice, source: ImageFormat, hasAlpha: Bool, animates: Bool) throws(ServerError) -> ImageFormat {
        if let explicit = choice.explicit {
            guard encodable.contains(explicit) else {
                throw ServerError(.badRequest, "format \(explicit.fileExtension ?? explicit.rawValue) is not written by this server")
            }
            return explicit
        }
        var preference: [ImageFormat] = [.avif, .webp, Self.jxl]
        if animates { preference = [.webp, .avif, Self.jxl] }
        if let chosen = preference.first(where: { choice.accepted.contains($0) && encodable.contains($0) }) { return chosen }
        let webFormats: Set<ImageFormat> = [.jpeg, .png, .webp, .avif, Self.jxl]
        if encodable.contains(source), webFormats.contains(source) || (source == .gif && animates) { return source }
        return hasAlpha && encodable.contains(.png) ? .png : .jpeg
    }

    /// Whether pictures in `format` can keep alpha (JPEG cannot: imgproxy flattens onto the
    /// background, white by default).
    static func keepsAlpha(_ format: ImageFormat) -> Bool { format != .jpeg }

    /// Whether `format`'s encoder embeds an ICC profile (GIF's does not).
    static func storesColourProfile(_ format: ImageFormat) -> Bool { format != .gif }

    /// imgproxy's qualities: `format_quality` for the format, else `quality`, else its defaults
    /// (80; WebP 79, AVIF 63, JPEG XL 77).
    static func quality(_ format: ImageFormat, options: RenderOptions) -> Int {
        if let quality = options.formatQuality[format] ?? options.quality { return quality }
        switch format {
        case .webp: return 79
        case .avif: return 63
        case jxl: return 77
        default: return 80
        }
    }

    /// Encoder effort for serving (``EncodeOptions/effort``, 0–6): AVIF 1 (libaom speed 8, as
    /// imgproxy's `IMGPROXY_AVIF_SPEED`), WebP 4 (libwebp's `method` 4, imgproxy's
    /// `IMGPROXY_WEBP_EFFORT`), JPEG XL 2 (libjxl effort 3), others their default.
    static func effort(_ format: ImageFormat) -> Int? {
        switch format {
        case .avif, .heif: return 1
        case .webp: return 4
        case jxl: return 2
        default: return nil
        }
    }

    /// The encoder options for `format`: quality and effort as above, the ICC profile to embed.
    static func encodeOptions(_ format: ImageFormat, options: RenderOptions, iccProfile: Data?) -> EncodeOptions {
        var encode = EncodeOptions()
        if format != .png && format != .gif { encode.quality = quality(format, options: options) }
        encode.effort = effort(format)
        if storesColourProfile(format) { encode.iccProfile = iccProfile }
        return encode
    }
}
