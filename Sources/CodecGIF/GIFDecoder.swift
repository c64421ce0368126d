import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes GIF with giflib: the first frame as the still picture, and every frame composited
/// as browsers do through `AnimatedImageDecoding`.
///
/// Register it with `DecoderRegistry().registering(GIFDecoder())`. The header info (canvas,
/// frame count, loop count, transparency) comes from walking the blocks without decompressing
/// pixels. A still picture asked for smaller than the canvas never holds the canvas: the first
/// frame's rows stream through the resampler as giflib decodes them.
public struct GIFDecoder: AnimatedImageDecoding {
    /// Creates a GIF decoder. It holds no state; one value serves every thread.
    public init() {}

    /// GIF: `GIF87a` or `GIF89a`.
    public var signatures: [ImageSignature] {
        [ImageSignature(format: .gif) { bytes in
            ImageSignature.bytes(bytes, start: Array("GIF87a".utf8)) || ImageSignature.bytes(bytes, start: Array("GIF89a".utf8))
        }]
    }

    /// Walks the blocks once for the info; the session decodes the first frame.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        let structure = try data.withUnsafeBytes { try GIFStructure($0) }
        return try body(Session(data: data, structure: structure))
    }

    /// A frame decoder over `data`: the canvas checked against `options.maxPixelCount`, the
    /// frames against its animation limits, from one walk of the blocks that stops one frame
    /// past what they allow, and the canvases held against
    /// `options.maxAnimationCanvasBytes` (no frame is decoded, no canvas allocated before). A refusal from a walk that stopped
    /// early has no `actual` count.
    public func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding {
        let structure = try data.withUnsafeBytes { try GIFStructure($0, animationLimits: options) }
        let info = GIFDecoder.info(structure)
        try options.checkPixelLimit(info)
        try options.checkAnimationLimits(canvas: structure.canvas, frameCount: structure.frameCount,
                                         exact: structure.countIsComplete)
        let animation = AnimationInfo(canvasSize: structure.canvas, frameCount: structure.frameCount)
        try options.checkAnimationCanvases(animation, bytes: estimatedAnimationMemory(animation))
        return try FrameDecoder(data: data, structure: structure, maxPixelCount: options.maxPixelCount,
                                pixelFormat: options.pixelFormat)
    }

    static func info(_ structure: GIFStructure) -> ImageInfo {
        // Alpha: a transparent index, more than one frame, or a first frame that leaves part of
        // the canvas transparent (Skia's SkFrameHolder: frame 0 has alpha when its rectangle is
        // not the screen).
        ImageInfo(format: .gif, size: structure.canvas,
                  hasAlpha: structure.hasTransparency || structure.frameCount > 1 || !structure.firstFrameCoversCanvas,
                  frameCount: max(1, structure.frameCount), isProgressive: structure.hasInterlacedFrame,
                  componentCount: 3, bitDepth: 8)
    }

    /// One GIF file, its blocks walked.
    final class Session: ImageDecodingSession {
        private let data: Data
        let info: ImageInfo
        /// The file was cut inside a block (``GIFStructure/endsInsideBlock``).
        private let endsInsideBlock: Bool

        init(data: Data, structure: GIFStructure) {
            self.data = data
            info = GIFDecoder.info(structure)
            endsInsideBlock = structure.endsInsideBlock
        }

        /// Full size: the RGBA8 canvas. Smaller: the output plus a canvas row. An interlaced
        /// frame's palette indices are gathered whole first (1 byte a pixel, at canvas size).
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            let canvas = info.size.pixelCount
            let interlace = info.isProgressive ? canvas : 0
            guard let target = options.targetSize, target.isValid, target != info.size else { return canvas * 4 + interlace }
            return target.pixelCount * 4 + info.size.width * 64 + interlace
        }

        /// The first frame, resampled to the target when one is given. A file cut inside a
        /// block gives a ``PipelineCore/DecodeIssue/Severity/truncated`` issue when the first
        /// frame is whole (later frames or data are missing), and
        /// ``PipelineCore/ImagePipelineError/truncatedData(format:message:)`` when giflib
        /// cannot read the first frame.
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let issues = endsInsideBlock ? [DecodeIssue.truncated("the file ends inside a block")] : []
            do {
                // In `options.pixelFormat`: a thumbnail is resampled premultiplied and converted
                // once; the full canvas is both straight and premultiplied (alpha is 0 or 255,
                // transparent pixels zero), so it is only relabelled.
                let reader = try GIFFrameReader(data, canvas: info.size, maxPixelCount: options.maxPixelCount)
                if let target = options.targetSize, target.isValid, target != info.size {
                    return DecodedImage(bitmap: try reader.firstFrame(resampledTo: target, filter: options.resamplingFilter)
                        .converted(to: options.pixelFormat), info: info, issues: issues)
                }
                guard let frame = try reader.nextFrame() else {
                    throw ImagePipelineError.corruptData(format: .gif, message: "the file has no frame")
                }
                return DecodedImage(bitmap: frame.canvas.converted(to: options.pixelFormat), info: info, issues: issues)
            } catch ImagePipelineError.corruptData(let format, let message) where endsInsideBlock {
                throw ImagePipelineError.truncatedData(format: format, message: message)
            }
        }
    }

    /// Frames in order through a ``GIFFrameReader``. Its memory is what
    /// ``PipelineCore/AnimatedImageDecoding/estimatedAnimationMemory(_:)`` estimates by default:
    /// the canvas, the copy of its rectangle a "restore to previous" frame keeps (at most a
    /// canvas), and the frame handed out (the canvas is copied when the next frame draws while
    /// the caller still holds it).
    final class FrameDecoder: AnimationFrameDecoding {
        let animationInfo: AnimationInfo
        private let reader: GIFFrameReader
        /// What a frame at canvas size is labelled: GIF's canvas is both (alpha 0 or 255,
        /// transparent pixels zero), so either is exact.
        private let pixelFormat: PixelFormat

        init(data: Data, structure: GIFStructure, maxPixelCount: Int, pixelFormat: PixelFormat) throws {
            self.pixelFormat = pixelFormat
            let delays = structure.delays.compactMap { $0 }
            animationInfo = AnimationInfo(canvasSize: structure.canvas, frameCount: structure.frameCount,
                                          loopCount: structure.loopCount,
                                          totalDurationMilliseconds: delays.isEmpty ? nil : delays.reduce(0, +))
            reader = try GIFFrameReader(data, canvas: structure.canvas, maxPixelCount: maxPixelCount)
        }

        func nextFrame(size: PixelSize?) throws -> AnimationFrame? {
            let index = reader.framesRead
            guard let frame = try reader.nextFrame() else { return nil }
            var bitmap = frame.canvas
            if let size, size.isValid, size != bitmap.size {
                bitmap = Resampler.resample(bitmap, to: size)
            } else {
                bitmap = bitmap.converted(to: pixelFormat)
            }
            return AnimationFrame(index: index, bitmap: bitmap, delayMilliseconds: frame.delayMilliseconds)
        }
    }
}
