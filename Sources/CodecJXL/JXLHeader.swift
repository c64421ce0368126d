import CJXL
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a JPEG XL file's headers say, read by libjxl without decoding any pixels: the basic
/// info (stored size, orientation, bit depth, alpha, animation), the colour encoding, and the
/// frame headers of its layers (counted, sized, durations summed), up to a bound.
///
/// The layers are walked with coalescing off (`JxlDecoderSetCoalescing`), so that libjxl
/// reports every layer it would blend, not only the frames it shows: a picture's cost grows
/// with its layers, their sizes (a layer may be larger than the canvas) and its channels (up
/// to 4,096 extra ones), none of which the canvas shows. A 609 KB file of 1,000 blended
/// 1000×1000 layers is one displayed frame that took 38 s to decode; its walk takes 10 ms.
/// Frames of type reference-only and LF are never reported by libjxl, so they are not counted.
struct JXLHeader {
    /// What the layers of one displayed frame (a still picture, or one frame of an animation)
    /// cost libjxl: each layer is decoded at its own size, every channel of it.
    struct LayerCost: Hashable {
        /// The layers blended into the frame, itself included.
        var layers = 0
        /// Their samples: width × height × channels (colour and extra), summed.
        var samples = 0
        /// The largest of them.
        var largest = PixelSize(width: 0, height: 0)
    }

    /// libjxl's basic info, with orientation kept (`xsize`/`ysize` as stored).
    let basic: JxlBasicInfo
    /// The original colour profile as ICC, when it is not sRGB (the file's own, or what libjxl
    /// writes for its colour encoding, e.g. linear sRGB).
    let originalICC: Data?
    /// Frames counted (1 for a still): the displayed ones, those with a duration and the last.
    let frameCount: Int
    /// Whether the walk over the frame headers reached the end: `false` when it stopped at the
    /// bound or at damage.
    let frameCountIsExact: Bool
    /// The layers walked (every frame libjxl reports with coalescing off; at least
    /// ``frameCount`` when the walk reached the end).
    let layerCount: Int
    /// The cost of the first displayed frame (what a still decode decodes), or `nil` when the
    /// walk stopped before its last layer.
    let firstFrameCost: LayerCost?
    /// The most costly displayed frame walked: the most layers, samples and largest layer of
    /// any one (each the largest on its own).
    let largestFrameCost: LayerCost
    /// The pixels of every layer walked, summed.
    let layerPixels: Int
    /// Whether the walk stopped at its bound (more layers than it was allowed), not at the end
    /// or at damage.
    let stoppedAtBound: Bool
    /// The frames' durations summed, in milliseconds (animations whose walk was exact).
    let totalDurationMilliseconds: Int?
    /// Why the walk over an animation's frame headers stopped short of the end (truncation or
    /// damage), or `nil`: a still decode of the file fails with it, though its first frame may
    /// be whole, as djxl does.
    let damage: (any Error)?

    /// Reads the headers of `bytes`, and walks the frame headers of up to `maxLayers` layers
    /// (the walk stops at one more); with `maxLayers` `nil`, the headers alone (``frameCount``
    /// 1 and no layer counted).
    init(_ bytes: UnsafeRawBufferPointer, maxLayers: Int?, threads: Int, quiet: Bool) throws {
        let handle = try JXLHandle(bytes: bytes, events: [JXL_DEC_BASIC_INFO, JXL_DEC_COLOR_ENCODING, JXL_DEC_FRAME],
                                   threads: threads, quiet: quiet)
        guard JxlDecoderSetKeepOrientation(handle.decoder, 1) == JXL_DEC_SUCCESS,
              JxlDecoderSetCoalescing(handle.decoder, 0) == JXL_DEC_SUCCESS else {
            throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused to keep the orientation and layers")
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
        guard let maxLayers else {
            (frameCount, frameCountIsExact, totalDurationMilliseconds, damage) = (1, false, nil, nil)
            (layerCount, firstFrameCost, largestFrameCost, layerPixels) = (0, nil, LayerCost(), 0)
            stoppedAtBound = false
            return
        }
        // The frame headers alone (no pixels are decoded without JXL_DEC_FULL_IMAGE subscribed).
        let channels = Int(basic.num_color_channels) + Int(basic.num_extra_channels)
        var walk = LayerWalk()
        var ticks = 0, exact = false
        var damage: (any Error)?
        walk: while walk.layers <= maxLayers {
            let status: JxlDecoderStatus
            do {
                status = try handle.process("frame \(walk.frames + 1)")
            } catch {
                damage = error
                break walk
            }
            switch status {
            case JXL_DEC_FRAME:
                var header = JxlFrameHeader()
                guard JxlDecoderGetFrameHeader(handle.decoder, &header) == JXL_DEC_SUCCESS else {
                    damage = ImagePipelineError.corruptData(format: .jxl, message: "libjxl gave no header for frame \(walk.frames + 1)")
                    break walk
                }
                ticks += Int(header.duration)
                walk.add(header, channels: channels)
            case JXL_DEC_SUCCESS:
                exact = true
                break walk
            default:
                damage = ImagePipelineError.corruptData(format: .jxl, message: "libjxl stopped at frame \(walk.frames + 1) (status \(status.rawValue))")
                break walk
            }
        }
        // A still's damage is left to its decode, which names what it was reading.
        self.damage = basic.have_animation != 0 ? damage : nil
        stoppedAtBound = !exact && damage == nil
        frameCount = max(1, walk.frames)
        frameCountIsExact = exact
        (layerCount, firstFrameCost, largestFrameCost, layerPixels) = (walk.layers, walk.first, walk.largest, walk.pixels)
        let numerator = Int(basic.animation.tps_numerator), denominator = Int(basic.animation.tps_denominator)
        totalDurationMilliseconds = basic.have_animation != 0 && exact && numerator > 0
            ? ticks * 1000 * denominator / numerator : nil
    }

    /// The layers walked so far, grouped into displayed frames as libjxl shows them: a frame
    /// ends at a layer with a duration, or at the last one.
    private struct LayerWalk {
        var layers = 0, frames = 0, pixels = 0
        var current = LayerCost()
        var first: LayerCost?
        var largest = LayerCost()

        mutating func add(_ header: JxlFrameHeader, channels: Int) {
            let size = PixelSize(width: Int(header.layer_info.xsize), height: Int(header.layer_info.ysize))
            // Up to 2^30 a side and 4,099 channels: the sums saturate rather than overflow.
            let layerPixels = size.pixelCount
            let (samples, overflow) = layerPixels.multipliedReportingOverflow(by: channels)
            layers += 1
            pixels = Self.sum(pixels, layerPixels)
            current.layers += 1
            current.samples = Self.sum(current.samples, overflow ? Int.max : samples)
            if layerPixels > current.largest.pixelCount { current.largest = size }
            largest.layers = max(largest.layers, current.layers)
            largest.samples = max(largest.samples, current.samples)
            if layerPixels > largest.largest.pixelCount { largest.largest = size }
            guard header.duration > 0 || header.is_last != 0 else { return }
            frames += 1
            if first == nil { first = current }
            current = LayerCost()
        }

        static func sum(_ a: Int, _ b: Int) -> Int {
            let (total, overflow) = a.addingReportingOverflow(b)
            return overflow ? Int.max : total
        }
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

extension JXLHeader {
    /// Refuses a still decode (the first displayed frame) whose layers would cost more than
    /// `options` allow, before any pixel is decoded: a layer over the pixel limit
    /// (`tooManyPixels`, as a canvas would be), more layers than the walk's bound
    /// (``Limit/layers``) or more samples than ``Limits/maxLayerSamples``
    /// (``Limit/layerSamples``). A walk that stopped at damage is left to the decode.
    func checkFirstFrame(_ options: DecodeOptions, walkBound: Int) throws {
        guard let cost = firstFrameCost else {
            if stoppedAtBound { throw ImagePipelineError.overLimit(.layers, limit: walkBound, actual: nil) }
            return
        }
        try check(cost, options)
    }

    /// Refuses an animation whose layers would cost more than `options` allow, before any frame
    /// is decoded: the frame and pixel limits count its layers (libjxl blends each onto the
    /// canvas), at least the canvas size each (`canvas`: upright), and each displayed frame is
    /// held to ``checkFirstFrame(_:walkBound:)``'s limits.
    func checkAnimation(_ options: DecodeOptions, canvas: PixelSize) throws {
        try options.checkAnimationLimits(canvas: canvas, frameCount: max(frameCount, layerCount), exact: frameCountIsExact)
        if layerPixels > options.maxAnimationPixelCount {
            throw ImagePipelineError.overLimit(.animationPixels, limit: options.maxAnimationPixelCount,
                                               actual: frameCountIsExact ? layerPixels : nil)
        }
        try check(largestFrameCost, options)
    }

    private func check(_ cost: LayerCost, _ options: DecodeOptions) throws {
        try options.checkPixelLimit(ImageInfo(format: .jxl, size: cost.largest))
        if cost.samples > options.limits.maxLayerSamples {
            throw ImagePipelineError.overLimit(.layerSamples, limit: options.limits.maxLayerSamples, actual: cost.samples)
        }
    }
}
