import CJXL
import ColorManagement
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension JXLDecoder: AnimatedImageDecoding {
    /// Every frame of a JPEG XL animation (a still is one frame), composited by libjxl
    /// (coalescing, its default: each frame is the full canvas as shown), oriented upright,
    /// in sRGB as a still is (see ``JXLDecoder``). The canvas is checked against
    /// `options.maxPixelCount` from the basic info, and the frames against the animation
    /// limits by a walk over the frame headers of its layers (no pixels decoded; every layer
    /// counted as a frame, since libjxl blends each onto the canvas) that stops at one more
    /// layer than `DecodeOptions/animationFramesAllowed(on:)`, before any frame is decoded;
    /// each frame's layers are held to the still limits (`Limits/maxLayerSamples`), and the canvases
    /// against `options.maxAnimationCanvasBytes`.
    public func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, data.count), alignment: 16)
        _ = data.copyBytes(to: bytes.bindMemory(to: UInt8.self))
        do {
            let input = UnsafeRawBufferPointer(rebasing: bytes[0..<data.count])
            // The canvas first (its header alone), then the layers.
            let still = try JXLHeader(input, maxLayers: nil, threads: 0, quiet: quiet)
            let upright = still.orientation.uprightSize(of: still.size)
            try options.checkPixelLimit(ImageInfo(format: .jxl, size: upright))
            let header = try JXLHeader(input, maxLayers: options.animationFramesAllowed(on: upright), threads: 0, quiet: quiet)
            try header.checkAnimation(options, canvas: upright)
            let animation = AnimationInfo(canvasSize: upright, frameCount: header.frameCount)
            try options.checkAnimationCanvases(animation, bytes: estimatedAnimationMemory(animation))
            return try AnimationDecoder(bytes: bytes, count: data.count, header: header, canvas: upright, options: options,
                                        threads: threadCount, quiet: quiet)
        } catch {
            bytes.deallocate()
            throw error
        }
    }

    /// Two RGBA8 canvases (the one libjxl writes, the copy handed out) and libjxl's own: the
    /// frame being decoded and the composited canvas it blends onto, counted as 32-bit float
    /// (16 bytes a pixel each). An upper bound, not measured on large animations (a still's
    /// decode keeps about 3 bytes a pixel of libjxl's; see `JXLDecoder`).
    public func estimatedAnimationMemory(_ info: AnimationInfo) -> Int { info.canvasBytes(2 + 8) }

    /// One libjxl decoder over a copy of the bytes it owns; both are freed in `deinit`.
    final class AnimationDecoder: AnimationFrameDecoding {
        let animationInfo: AnimationInfo
        private let bytes: UnsafeMutableRawBufferPointer
        private let handle: JXLHandle
        private let header: JXLHeader
        private let profile: ColorProfile?
        private let options: DecodeOptions
        private var index = 0
        private var finished = false

        /// Takes ownership of `bytes` (the first `count` are the file) once it returns; on a throw the caller frees them.
        init(bytes: UnsafeMutableRawBufferPointer, count: Int, header: JXLHeader, canvas: PixelSize, options: DecodeOptions,
             threads: Int, quiet: Bool) throws {
            handle = try JXLHandle(bytes: UnsafeRawBufferPointer(rebasing: bytes[0..<count]),
                                   events: [JXL_DEC_BASIC_INFO, JXL_DEC_COLOR_ENCODING, JXL_DEC_FRAME, JXL_DEC_FULL_IMAGE],
                                   threads: threads, quiet: quiet)
            guard JxlDecoderSetUnpremultiplyAlpha(handle.decoder, 1) == JXL_DEC_SUCCESS else {
                throw ImagePipelineError.corruptData(format: .jxl, message: "libjxl refused the decoding options")
            }
            self.header = header
            self.options = options
            profile = try header.originalICC.map { try ColorManagement.profile(iccData: $0, limits: .default) }
            let loops = header.basic.have_animation != 0 ? Int(header.basic.animation.num_loops) : nil
            animationInfo = AnimationInfo(canvasSize: canvas, frameCount: header.frameCount, loopCount: loops,
                                          totalDurationMilliseconds: header.totalDurationMilliseconds)
            self.bytes = bytes
        }

        deinit { bytes.deallocate() }

        func nextFrame(size: PixelSize?) throws -> AnimationFrame? {
            guard !finished else { return nil }
            var delay: Int?
            var pixelProfile = header.isXYB ? nil : profile
            while true {
                let status: JxlDecoderStatus
                do {
                    status = try handle.process("frame \(index + 1)")
                } catch {
                    finished = true
                    throw error
                }
                switch status {
                case JXL_DEC_BASIC_INFO:
                    let basic = try handle.basicInfo()
                    guard PixelSize(width: Int(basic.xsize), height: Int(basic.ysize)) == animationInfo.canvasSize else {
                        throw ImagePipelineError.corruptData(format: .jxl, message: "the canvas changed between two reads")
                    }
                case JXL_DEC_COLOR_ENCODING:
                    if header.isXYB, profile != nil {
                        pixelProfile = try JXLDecoder.xybPixelProfile(handle, header: header, options: options)
                    }
                case JXL_DEC_FRAME:
                    var frame = JxlFrameHeader()
                    let numerator = Int(header.basic.animation.tps_numerator)
                    if header.basic.have_animation != 0, numerator > 0,
                       JxlDecoderGetFrameHeader(handle.decoder, &frame) == JXL_DEC_SUCCESS {
                        delay = Int(frame.duration) * 1000 * Int(header.basic.animation.tps_denominator) / numerator
                    }
                case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                    var bitmap = Bitmap(zeroed: animationInfo.canvasSize, pixelFormat: .rgba8Straight)
                    do {
                        try handle.decodeImage(into: &bitmap, stage: "frame \(index + 1)")
                    } catch {
                        finished = true
                        throw error
                    }
                    var decoded = DecodedImage(bitmap: bitmap, info: ImageInfo(format: .jxl, size: animationInfo.canvasSize,
                                                                               hasAlpha: header.basic.alpha_bits > 0))
                    decoded.applyColorProfile(pixelProfile, options: options, pictureIsGray: header.isGray)
                    // Straight as libjxl gives it when asked (exact, as a still is); premultiplied
                    // for the resampler or when asked.
                    var canvas = decoded.bitmap
                    if let size, size.isValid, size != canvas.size {
                        canvas = Resampler.resample(canvas.premultiplied(), to: size)
                    } else {
                        canvas = canvas.converted(to: options.pixelFormat)
                    }
                    let frame = AnimationFrame(index: index, bitmap: canvas, delayMilliseconds: delay)
                    index += 1
                    return frame
                case JXL_DEC_SUCCESS:
                    finished = true
                    return nil
                default:
                    continue
                }
            }
        }
    }
}
