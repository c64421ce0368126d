import CPNGShim
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes a `Bitmap` as an 8-bit PNG, which stores straight alpha: a straight
/// bitmap's bytes are written unchanged, a premultiplied one has alpha divided back out first.
/// A bitmap without a transparent pixel is
/// written as RGB (no alpha channel), any other as RGBA. No text or EXIF chunk is written;
/// `EncodeOptions.iccProfile` goes into an `iCCP` chunk (libpng checks it first).
public struct PNGEncoder: Sendable, RenditionEncoding, ImageEncoding {
    /// `ImageFormat.png`.
    public var format: ImageFormat { .png }

    /// The zlib level, 0 (store) to 9 (smallest). Default 6, libpng's own default.
    public var compressionLevel: Int

    /// Creates an encoder with `compressionLevel` (0–9, default 6).
    public init(compressionLevel: Int = 6) {
        self.compressionLevel = compressionLevel
    }

    /// The PNG bytes of `bitmap`.
    /// - Throws: `EncodingError.failed(format:message:)` with libpng's message if
    ///   libpng refuses (it does not for valid bitmaps).
    public func encode(_ bitmap: Bitmap) throws -> Data {
        try encode(bitmap, options: EncodeOptions(compressionLevel: compressionLevel))
    }

    /// The PNG bytes of `bitmap` with `options.compressionLevel` (0–9; `nil`: this encoder's
    /// ``compressionLevel``); `options.progressive` writes Adam7 interlacing (a coarse picture
    /// after the first seventh of the file; typically a few percent bigger); `options.effort` 0
    /// writes no row filters (filter type None: the fastest to write and to decode, larger), any
    /// other value or `nil` lets libpng choose a filter per row. PNG is always lossless:
    /// `quality`, `lossless`, `chromaSubsampling` and `optimizesCoding` are ignored.
    /// - Throws: `EncodingError`.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        try validateCommonOptions(options)
        let compressionLevel = options.compressionLevel ?? self.compressionLevel
        guard (0...9).contains(compressionLevel) else {
            throw EncodingError.invalidOptions(format: .png, message: "compression level \(compressionLevel) is outside 0...9")
        }
        let icc = try EncodeOptions.checkedICCProfile(options.iccProfile, format: .png) ?? Data()
        let straight = bitmap.unpremultipliedBytes()
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: 256)
        let code = straight.withUnsafeBufferPointer { pixels in
            icc.withUnsafeBytes { profile in
                message.withUnsafeMutableBufferPointer { text in
                    pngshim_encode_rgba_interlaced(pixels.baseAddress, UInt32(bitmap.width), UInt32(bitmap.height),
                                                   bitmap.width * 4, Int32(compressionLevel),
                                                   (options.progressive ? 1 : 0) | (options.effort == 0 ? 2 : 0),
                                                   profile.baseAddress?.assumingMemoryBound(to: UInt8.self), profile.count,
                                                   &output, &size, text.baseAddress, text.count)
                }
            }
        }
        defer { pngshim_free(output) }
        guard code == Int32(PNGSHIM_OK), let output else {
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw EncodingError.failed(format: .png, message: text.isEmpty ? "libpng could not encode" : text)
        }
        return Data(bytes: output, count: size)
    }
}
