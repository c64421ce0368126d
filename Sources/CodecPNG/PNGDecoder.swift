import CPNGShim
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes PNG with libpng: every colour type and bit depth, palettes with tRNS, 16-bit
/// (scaled to 8), Adam7; output RGBA8, premultiplied or straight as
/// `DecodeOptions.pixelFormat` asks (straight at full size is libpng's values
/// exactly; a smaller target is resampled premultiplied, then made straight). An `iCCP` profile is converted to sRGB on
/// the output rows (`ColorManagement`; off with `DecodeOptions.convertsToSRGB`).
/// Without one, `gAMA`/`cHRM` are left as stored (libpng applies none unless asked), like
/// PngSuite's references; `sRGB` needs nothing.
///
/// Register it with `DecoderRegistry.registering(_:)`:
/// `DecoderRegistry().registering(PNGDecoder())`.
///
/// Memory: a non-interlaced picture asked for at a smaller size is shrunk while its rows are
/// read (each row goes into a `RowResampler`), so a 6000×4000 thumbnail holds
/// the output plus a few rows, never the full bitmap. An interlaced (Adam7) picture needs every
/// pass before any row is final, so it is decoded at full size (after the pixel-limit check)
/// and then resampled.
public struct PNGDecoder: ImageDecoding {
    /// Rows read from libpng per call: amortises the C call without holding much memory.
    static let rowBatch = 16

    /// Creates a PNG decoder. It holds no state; one value serves every thread.
    public init() {}

    /// PNG: the 8-byte signature `89 50 4E 47 0D 0A 1A 0A`.
    public var signatures: [ImageSignature] { [.magic([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], format: .png)] }

    /// Opens libpng over `data` and reads IHDR (and the chunks before the image data) once. The
    /// session decodes to the target exactly when it is smaller (shrinking row by row), else at
    /// full size. PNG has no orientation to apply.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try data.withUnsafeBytes { bytes in
            let session = try Session(bytes: bytes)
            return try body(session)
        }
    }

    /// One PNG opened by libpng, its header read.
    final class Session: ImageDecodingSession {
        private let decoder: PNGSession
        private var header: pngshim_info
        private let profile: ColorProfile?
        let info: ImageInfo

        init(bytes: UnsafeRawBufferPointer) throws {
            decoder = try PNGSession(bytes: bytes)
            header = try decoder.readInfo()
            var info = PNGDecoder.info(header)
            profile = try decoder.iccProfile.map { try ColorManagement.profile(iccData: $0, limits: .default) }
            info.colorProfile = profile?.info
            self.info = info
        }

        /// The pixels' memory, plus what the colour profile's transform takes to build.
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            ColorProfile.estimate(pixelMemory(options), convertingWith: profile, options: options)
        }

        /// Full size as RGBA8 when the whole picture is read (full size, or Adam7 interlace);
        /// otherwise the shrunk output plus one batch of rows and the resampler's accumulators.
        private func pixelMemory(_ options: DecodeOptions) -> Int {
            let full = info.size.pixelCount * 4
            guard let target = options.targetSize, target.isValid,
                  target.width < info.size.width || target.height < info.size.height else { return full }
            let output = min(target.width, info.size.width) * min(target.height, info.size.height) * 4
            if header.interlaced != 0 { return full + output }
            // Rows as RGBA8 in one batch, and the resampler's per-column accumulators.
            return output + info.size.width * 4 * min(PNGDecoder.rowBatch, info.size.height) + info.size.width * 32
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            try decoder.setRGBA8(&header)
            let bitmap: Bitmap
            if let target = options.targetSize, target.isValid,
               target.width < info.size.width || target.height < info.size.height {
                let output = PixelSize(width: min(target.width, info.size.width), height: min(target.height, info.size.height))
                // Resampled premultiplied (no fringes), then made straight once if asked.
                if header.interlaced != 0 {
                    let whole = try PNGDecoder.readWhole(decoder, size: info.size, alpha: info.hasAlpha, format: .rgba8Premultiplied)
                    bitmap = Resampler.resample(whole, to: output, filter: options.resamplingFilter).converted(to: options.pixelFormat)
                } else {
                    bitmap = try PNGDecoder.readShrinking(decoder, size: info.size, to: output, alpha: info.hasAlpha,
                                                          filter: options.resamplingFilter)
                        .converted(to: options.pixelFormat)
                }
            } else {
                bitmap = try PNGDecoder.readWhole(decoder, size: info.size, alpha: info.hasAlpha, format: options.pixelFormat)
            }
            var issues = decoder.issues
            if let trailing = decoder.readEnd() { issues.append(trailing) }
            var decoded = DecodedImage(bitmap: consume bitmap, info: info, issues: issues)
            // On the output rows (already shrunk for a thumbnail).
            decoded.applyColorProfile(profile, options: options, pictureIsGray: header.color_type & 2 == 0 && header.color_type != 3)
            return decoded
        }
    }

    /// Decodes every row into a full-size bitmap in `format`: libpng's straight rows as they
    /// are, or premultiplied (only a picture with `alpha` needs it).
    static func readWhole(_ session: borrowing PNGSession, size: PixelSize, alpha: Bool, format: PixelFormat) throws -> Bitmap {
        var bitmap = Bitmap(zeroed: size, pixelFormat: format)
        try session.readImage(into: &bitmap)
        if alpha && format.isPremultiplied { bitmap.withUnsafeMutableBytes { Bitmap.premultiply($0) } }
        return bitmap
    }

    /// Reads rows in small batches and pushes each into a resampler: memory is the output plus
    /// one batch of rows.
    static func readShrinking(_ session: borrowing PNGSession, size: PixelSize, to output: PixelSize,
                                      alpha: Bool, filter: ResamplingFilter = .default) throws -> Bitmap {
        var resampler = RowResampler(sourceSize: size, outputSize: output, filter: filter)
        let stride = size.width * 4
        let batch = min(rowBatch, size.height)
        var rows = [UInt8](repeating: 0, count: stride * batch)
        var y = 0
        while y < size.height {
            let count = min(batch, size.height - y)
            try rows.withUnsafeMutableBytes { buffer in
                try session.readRows(into: buffer, stride: stride, count: count)
                let typed = buffer.bindMemory(to: UInt8.self)
                for r in 0..<count {
                    let row = UnsafeMutableBufferPointer(rebasing: typed[(r * stride)..<((r + 1) * stride)])
                    if alpha { Bitmap.premultiply(row) }
                    resampler.push(row: UnsafeBufferPointer(row))
                }
            }
            y += count
        }
        return resampler.finish()
    }

    static func info(_ header: pngshim_info) -> ImageInfo {
        ImageInfo(format: .png, size: PixelSize(width: Int(header.width), height: Int(header.height)),
                  hasAlpha: header.has_alpha != 0, isProgressive: header.interlaced != 0,
                  componentCount: Int(header.channels), bitDepth: Int(header.bit_depth))
    }
}
