import CWebP
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension WebPDecoder: AnimatedImageDecoding {
    /// Every frame of an animated WebP (a still one is one frame) through libwebp's
    /// `WebPAnimDecoder`, composited as libwebp shows them: in `MODE_RGBA` (blended straight,
    /// as libwebp's `anim_dump` and Pillow show them) when `options.pixelFormat` is straight,
    /// else `MODE_rgbA` (premultiplied; so are frames asked for scaled). The
    /// canvas is checked against `options.maxPixelCount` from the header, and the frame count
    /// (`WebPDemux`'s, read from the container's chunk headers) against the animation limits,
    /// and the four canvases against `options.maxAnimationCanvasBytes`, before libwebp
    /// allocates its two. The total duration comes from one walk over
    /// the chunk headers (`WebPFrameHeaders`), linear in the frame count: libwebp's frame
    /// iterator is O(n) per step. It is `nil` when that walk and the demuxer disagree.
    public func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding {
        let (canvas, frameCount) = try data.withUnsafeBytes { raw in
            let bytes = try WebPInput.bytes(raw)
            let features = try WebPInput.features(bytes)
            let canvas = PixelSize(width: Int(features.width), height: Int(features.height))
            try options.checkPixelLimit(ImageInfo(format: .webp, size: canvas))
            return (canvas, features.has_animation != 0 ? try WebPInput.Demuxer(bytes).frameCount : 1)
        }
        try options.checkAnimationLimits(canvas: canvas, frameCount: frameCount)
        // Before `WebPAnimDecoderNew`, which allocates libwebp's two canvases.
        let animation = AnimationInfo(canvasSize: canvas, frameCount: frameCount)
        try options.checkAnimationCanvases(animation, bytes: estimatedAnimationMemory(animation))
        return try AnimationDecoder(data, pixelFormat: options.pixelFormat)
    }

    /// Four RGBA8 canvases: libwebp's two (the canvas and the disposed previous frame), the
    /// copy of it each frame is handed out in, and at most a canvas for decoding one frame's
    /// bitstream.
    public func estimatedAnimationMemory(_ info: AnimationInfo) -> Int { info.canvasBytes(4) }

    /// One `WebPAnimDecoder` over a copy of the bytes it owns; both are freed in `deinit`.
    final class AnimationDecoder: AnimationFrameDecoding {
        let animationInfo: AnimationInfo
        private let bytes: UnsafeMutableBufferPointer<UInt8>
        private let decoder: OpaquePointer
        private var index = 0
        private var lastTimestamp: Int32 = 0
        /// The canvas's format, as libwebp composites it.
        private let pixelFormat: PixelFormat

        init(_ data: Data, pixelFormat: PixelFormat) throws {
            self.pixelFormat = pixelFormat
            let bytes = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, data.count))
            _ = bytes.initialize(from: data)
            var options = WebPAnimDecoderOptions()
            var webpData = WebPData(bytes: bytes.baseAddress, size: data.count)
            guard WebPAnimDecoderOptionsInit(&options) != 0 else {
                bytes.deallocate()
                throw ImagePipelineError.corruptData(format: .webp, message: "libwebp's animation decoder ABI does not match its headers")
            }
            options.color_mode = pixelFormat == .rgba8Straight ? MODE_RGBA : MODE_rgbA
            options.use_threads = 0
            guard let decoder = WebPAnimDecoderNew(&webpData, &options) else {
                bytes.deallocate()
                throw ImagePipelineError.corruptData(format: .webp, message: "WebPAnimDecoder could not parse the file")
            }
            var info = WebPAnimInfo()
            guard WebPAnimDecoderGetInfo(decoder, &info) != 0 else {
                WebPAnimDecoderDelete(decoder)
                bytes.deallocate()
                throw ImagePipelineError.corruptData(format: .webp, message: "WebPAnimDecoder gave no animation info")
            }
            self.bytes = bytes
            self.decoder = decoder
            // The frames' durations, from the container's ANMF chunk headers in one pass (no
            // pixels decoded; libwebp's frame iterator is O(n) per step). `nil` if the walk
            // disagrees with the demuxer's frame count (damage the demuxer tolerated).
            let frameCount = Int(info.frame_count)
            let total = WebPFrameHeaders.totalDuration(UnsafeBufferPointer(rebasing: bytes[0..<data.count]),
                                                       frameCount: frameCount)
            animationInfo = AnimationInfo(canvasSize: PixelSize(width: Int(info.canvas_width), height: Int(info.canvas_height)),
                                          frameCount: frameCount, loopCount: Int(info.loop_count),
                                          totalDurationMilliseconds: total)
        }

        deinit {
            WebPAnimDecoderDelete(decoder)
            bytes.deallocate()
        }

        func nextFrame(size: PixelSize?) throws -> AnimationFrame? {
            guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
            var pixels: UnsafeMutablePointer<UInt8>?
            var timestamp: Int32 = 0
            guard WebPAnimDecoderGetNext(decoder, &pixels, &timestamp) != 0, let pixels else {
                throw ImagePipelineError.corruptData(format: .webp, message: "WebPAnimDecoder could not decode frame \(index + 1)")
            }
            let canvas = animationInfo.canvasSize
            let buffer = UnsafeBufferPointer(start: pixels, count: canvas.pixelCount * 4)
            guard var bitmap = Bitmap(width: canvas.width, height: canvas.height, bytesPerRow: canvas.width * 4,
                                      pixelFormat: pixelFormat, bytes: Array(buffer)) else {
                throw ImagePipelineError.corruptData(format: .webp, message: "the canvas is \(canvas)")
            }
            if let size, size.isValid, size != canvas { bitmap = Resampler.resample(bitmap.premultiplied(), to: size) }
            let frame = AnimationFrame(index: index, bitmap: bitmap, delayMilliseconds: Int(timestamp) - Int(lastTimestamp))
            index += 1
            lastTimestamp = timestamp
            return frame
        }
    }
}
