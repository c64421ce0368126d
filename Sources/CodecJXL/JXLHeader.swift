import CJXL
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a JPEG XL file's headers say, read by libjxl without decoding any pixels: the basic
/// info (stored size, orientation, bit depth, alpha, animation), the colour encoding, and for an
/// animation the frame headers (counted, durations summed), up to a bound.
struct JXLHeader {
    /// libjxl's basic info, with orientation kept (`xsize`/`ysize` as stored).
    let basic: JxlBasicInfo
    /// The original colour profile as ICC, when it is not sRGB (the file's own, or what libjxl
    /// writes for its colour encoding, e.g. linear sRGB).
    let originalICC: Data?
    /// Frames counted (1 for a still).
    let frameCount: Int
    /// Whether the walk over the frame headers reached the end: `false` when it stopped at the
    /// bound or at damage.
    let frameCountIsExact: Bool
    /// The frames' durations summed, in milliseconds (animations whose walk was exact).
    let totalDurationMilliseconds: Int?
    /// Why the walk over an animation's frame headers stopped short of the end (truncation or
    /// damage), or `nil`: a still decode of the file fails with it, though its first frame may
    /// be whole, as djxl does.
    let damage: (any Error)?

    /// Reads the headers of `bytes`. An animation's frame headers are walked up to `maxFrames`
    /// frames (the walk stops at one more); a still's are not read.
    init(_ bytes: UnsafeRawBufferPointer, maxFrames: Int, threads: Int, quiet: Bool) throws {
        let handle = try JXLHandle(bytes: bytes, events: [JXL_DEC_BASIC_INFO, JXL_DEC_COLOR_ENCODING, JXL_DEC_FRAME],
                                   threads: threads, quiet: quiet)
        guard JxlDecoderSetKeepOrientation(handle.decoder, 1) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused to keep the orientation")
        }
        var basic: JxlBasicInfo?
        while true {
            let status = try handle.process("the header")
            if status == JXL_DEC_BASIC_INFO {
                basic = try handle.basicInfo()
            } else if status == JXL_DEC_COLOR_ENCODING {
                break
            } else {
                throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl reported no colour encoding")
            }
        }
        guard let basic else { throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl reported no basic info") }
        self.basic = basic
        originalICC = handle.originalIsSRGB() ? nil : handle.iccProfile(JXL_COLOR_PROFILE_TARGET_ORIGINAL)
        guard basic.have_animation != 0 else {
            (frameCount, frameCountIsExact, totalDurationMilliseconds, damage) = (1, true, nil, nil)
            return
        }
        // The frame headers alone (no pixels are decoded without JXL_DEC_FULL_IMAGE subscribed).
        var count = 0, ticks = 0, exact = false
        var damage: (any Error)?
        walk: while count <= maxFrames {
            let status: JxlDecoderStatus
            do {
                status = try handle.process("frame \(count + 1)")
            } catch {
                damage = error
                break walk
            }
            switch status {
            case JXL_DEC_FRAME:
                count += 1
                var header = JxlFrameHeader()
                if JxlDecoderGetFrameHeader(handle.decoder, &header) == JXL_DEC_SUCCESS { ticks += Int(header.duration) }
            case JXL_DEC_SUCCESS:
                exact = true
                break walk
            default:
                damage = ImagePipelineError.corruptData(format: .jxl, message: "libjxl stopped at frame \(count + 1) (status \(status.rawValue))")
                break walk
            }
        }
        self.damage = damage
        frameCount = max(1, count)
        frameCountIsExact = exact
        let numerator = Int(basic.animation.tps_numerator), denominator = Int(basic.animation.tps_denominator)
        totalDurationMilliseconds = exact && numerator > 0 ? ticks * 1000 * denominator / numerator : nil
    }

    /// The stored size (before orientation).
    var size: PixelSize { PixelSize(width: Int(basic.xsize), height: Int(basic.ysize)) }

    /// The codestream's orientation (EXIF numbering).
    var orientation: ImageOrientation { ImageOrientation(rawValue: Int(basic.orientation.rawValue)) ?? .up }

    /// Whether the picture is coded in XYB (lossy VarDCT or lossy modular): libjxl can then decode
    /// it into any colour space, sRGB included, by itself.
    var isXYB: Bool { basic.uses_original_profile == 0 }

    /// Whether the picture is gray.
    var isGray: Bool { basic.num_color_channels == 1 }

    /// The header as `ImageInfo` (the profile's description is added by the session).
    var info: ImageInfo {
        ImageInfo(format: .jxl, size: size, orientation: orientation, hasAlpha: basic.alpha_bits > 0,
                  frameCount: frameCount, isProgressive: false,
                  componentCount: Int(basic.num_color_channels) + (basic.alpha_bits > 0 ? 1 : 0),
                  bitDepth: Int(basic.bits_per_sample))
    }
}
