import CJXL
import LazyLibraries
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One libjxl decoder (`JxlDecoder`) and its thread runner, if it has one, over bytes the caller
/// keeps alive: both are destroyed in `deinit`, so every path out of a decode (success, a typed
/// error, an early return) frees them.
///
/// Every `JxlDecoderProcessInput` goes through ``process()``, which turns the statuses that
/// end a decode into typed errors: `JXL_DEC_ERROR` (corrupt data) and `JXL_DEC_NEED_MORE_INPUT`
/// (the file is truncated: all of it was given at once, so more input can only mean it was cut,
/// and a cut file can never hang). The input is deliberately not closed
/// (`JxlDecoderCloseInput`): libjxl 0.7 finds the end of the frames without it (it is needed
/// only for `JXL_DEC_BOX`, not used here), and a closed input turns a cut into a plain
/// `JXL_DEC_ERROR`, which could not be told from corruption. With `quiet`, the call runs with fd 2
/// on `/dev/null` (`StandardErrorSilencer`): libjxl 0.7 as Debian builds it
/// prints a trace line for every failure (`./lib/jxl/decode.cc:2143: missing input`) and has
/// no setting or callback for it.
final class JXLHandle {
    let decoder: OpaquePointer
    private let runner: UnsafeMutableRawPointer?
    private let quiet: Bool

    /// A decoder over `bytes` (all of them), told to report `events`, with
    /// `threads` worker threads (0: it decodes on the calling thread).
    init(bytes: UnsafeRawBufferPointer, events: [JxlDecoderStatus], threads: Int, quiet: Bool) throws {
        do { try LazyLibrary.jxl.load() } catch { throw ImagePipelineError.libraryUnavailable(error) }
        guard let decoder = JxlDecoderCreate(nil) else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl could not create a decoder (out of memory)")
        }
        self.decoder = decoder
        self.quiet = quiet
        runner = threads > 0 ? JxlThreadParallelRunnerCreate(nil, threads) : nil
        if let runner, JxlDecoderSetParallelRunner(decoder, JxlThreadParallelRunner, runner) != JXL_DEC_SUCCESS {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused its own thread runner")
        }
        let wanted = events.reduce(0) { $0 | Int32(bitPattern: $1.rawValue) }
        guard JxlDecoderSubscribeEvents(decoder, wanted) == JXL_DEC_SUCCESS,
              let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
              JxlDecoderSetInput(decoder, base, bytes.count) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused the input (\(bytes.count) bytes)")
        }
    }

    deinit {
        JxlDecoderDestroy(decoder)
        if let runner { JxlThreadParallelRunnerDestroy(runner) }
    }

    /// The next event, or a typed error for a failure or truncation. `stage` names what was
    /// being read, for the message ("the header", "frame 3").
    func process(_ stage: @autoclosure () -> String) throws -> JxlDecoderStatus {
        let status = quiet ? StandardErrorSilencer.silenced { JxlDecoderProcessInput(decoder) } : JxlDecoderProcessInput(decoder)
        switch status {
        case JXL_DEC_ERROR:
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl could not decode \(stage()): the data is corrupt")
        case JXL_DEC_NEED_MORE_INPUT:
            throw ImagePipelineError.truncatedData(format: .jxl, message: "the file is truncated: it ends inside \(stage())")
        default:
            return status
        }
    }

    /// The basic info (after `JXL_DEC_BASIC_INFO`).
    func basicInfo() throws -> JxlBasicInfo {
        var info = JxlBasicInfo()
        guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl gave no basic info")
        }
        return info
    }

    /// The ICC profile of `target` (after `JXL_DEC_COLOR_ENCODING`): the original's (the file's
    /// own profile, or one libjxl writes for its colour encoding), or the one the pixels are
    /// decoded in. `nil` when libjxl has none.
    func iccProfile(_ target: JxlColorProfileTarget) -> Data? {
        var format = JXLHandle.rgba8
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, &format, target, &size) == JXL_DEC_SUCCESS, size > 0,
              size <= 64 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: size)
        let status = bytes.withUnsafeMutableBufferPointer { buffer in
            JxlDecoderGetColorAsICCProfile(decoder, &format, target, buffer.baseAddress, size)
        }
        return status == JXL_DEC_SUCCESS ? Data(bytes) : nil
    }

    /// Whether the original colour encoding is sRGB (or gray with the sRGB transfer), told by
    /// libjxl's encoded profile; `false` for an ICC profile or another encoding.
    func originalIsSRGB() -> Bool {
        var format = JXLHandle.rgba8
        var encoding = JxlColorEncoding()
        guard JxlDecoderGetColorAsEncodedProfile(decoder, &format, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &encoding)
                == JXL_DEC_SUCCESS else { return false }
        let space = encoding.color_space == JXL_COLOR_SPACE_GRAY || (encoding.color_space == JXL_COLOR_SPACE_RGB
                                                                    && encoding.primaries == JXL_PRIMARIES_SRGB)
        return space && encoding.white_point == JXL_WHITE_POINT_D65 && encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
    }

    /// Asks for sRGB output (after `JXL_DEC_COLOR_ENCODING`): libjxl converts from XYB itself.
    /// Only an XYB-coded (lossy) picture can be converted; `false` when libjxl refuses.
    func preferSRGB(gray: Bool) -> Bool {
        var encoding = JxlColorEncoding()
        JxlColorEncodingSetToSRGB(&encoding, gray ? 1 : 0)
        return JxlDecoderSetPreferredColorProfile(decoder, &encoding) == JXL_DEC_SUCCESS
    }

    /// Decodes the next image into `bitmap` (after `JXL_DEC_NEED_IMAGE_OUT_BUFFER`), straight
    /// RGBA8, until `JXL_DEC_FULL_IMAGE`: libjxl writes into the bitmap's own bytes.
    ///
    /// With `dcIsEnough` (the handle subscribed to `JXL_DEC_FRAME_PROGRESSION` at `kDC`), it
    /// stops at the frame's DC instead: when libjxl reports the 1:8 DC image decoded
    /// (`JxlDecoderGetIntendedDownsamplingRatio` 8), `JxlDecoderFlushImage` writes it, upsampled
    /// by libjxl to full size, into the bitmap, and the AC passes are never decoded. Returns
    /// whether it stopped there.
    @discardableResult
    func decodeImage(into bitmap: inout Bitmap, stage: String, dcIsEnough: Bool = false) throws -> Bool {
        let size = bitmap.size
        return try bitmap.withUnsafeMutableBytes { buffer in
            try decodeImage(into: UnsafeMutableRawBufferPointer(buffer), size: size, format: JXLHandle.rgba8, stage: stage,
                            dcIsEnough: dcIsEnough)
        }
    }

    /// ``decodeImage(into:stage:dcIsEnough:)`` into `buffer`, `size` pixels of `format` (RGBA8, or
    /// RGB8 for an opaque picture resampled from libjxl's output: a quarter less memory).
    @discardableResult
    func decodeImage(into buffer: UnsafeMutableRawBufferPointer, size pixels: PixelSize, format: JxlPixelFormat,
                     stage: String, dcIsEnough: Bool = false) throws -> Bool {
        var format = format
        var size = 0
        guard JxlDecoderImageOutBufferSize(decoder, &format, &size) == JXL_DEC_SUCCESS,
              size == pixels.pixelCount * Int(format.num_channels), buffer.count >= size else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl wants \(size) bytes for a \(pixels) picture")
        }
        guard JxlDecoderSetImageOutBuffer(decoder, &format, buffer.baseAddress, size) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused the output buffer")
        }
        while true {
            let status = try process(stage)
            if status == JXL_DEC_FULL_IMAGE { return false }
            if status == JXL_DEC_FRAME_PROGRESSION, dcIsEnough, JxlDecoderGetIntendedDownsamplingRatio(decoder) == 8,
               JxlDecoderFlushImage(decoder) == JXL_DEC_SUCCESS {
                return true
            }
            guard status == JXL_DEC_FRAME_PROGRESSION || status == JXL_DEC_FRAME else {
                throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl stopped decoding \(stage) (status \(status.rawValue))")
            }
        }
    }

    /// Four 8-bit channels, RGBA: libjxl expands gray to RGB, adds opaque alpha, and rounds 16-bit
    /// and float samples to 8 bits itself.
    static let rgba8 = JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
    /// Three 8-bit channels, RGB, for an opaque colour picture.
    static let rgb8 = JxlPixelFormat(num_channels: 3, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
}
