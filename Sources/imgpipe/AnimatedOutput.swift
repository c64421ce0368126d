import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `thumb`, `convert` and `decode` of an animation into a format that animates (`.webp`,
/// `.gif`): every frame at the requested size, with its processors, delays as browsers show
/// them and the loop count, as `vipsthumbnail` keeps an animation. `--first-frame` writes the
/// still first frame instead, as every other output does.
///
/// The still answer comes first (it costs one frame); only when its format's decoder reads
/// animations and the file has more than one frame are the frames decoded, one at a time into
/// the encoder's session, so memory stays a few canvases however many frames there are.
enum AnimatedOutput {
    /// Writes `request`'s animation to `path` and returns its frame count, or returns `nil`
    /// when the still `response` is the answer (a still picture, one frame, `--first-frame`,
    /// or an output that does not animate).
    static func write(_ request: ImageRequest, still response: ImageResponse, pipeline: ImagePipeline,
                      settings: OutputSettings, to path: String, firstFrameOnly: Bool) async throws -> Int? {
        guard !firstFrameOnly, let encoder = settings.encoder as? any AnimationEncoding,
              pipeline.configuration.decoders.readsAnimations(of: response.format)
        else { return nil }
        // Premultiplied frames for processors (they work on those, as on a still), the encoders
        // making each frame straight once; without processors, straight frames: at canvas size
        // they are composited straight, keeping the colour of pixels of low alpha.
        var frames = request
        frames.processing.pixelFormat = request.processors.isEmpty ? .rgba8Straight : .rgba8Premultiplied
        let animation = try await pipeline.animation(for: frames)
        guard animation.info.frameCount > 1 else { return nil }
        let written: (data: Data, frameCount: Int)?
        do {
            written = try await encoder.encode(animation, processors: request.processors.map(ImageProcessor.init), options: settings.options)
        } catch let error as EncodingError {
            throw OutputError.encodingFailed(path: path, error)
        }
        guard let written else { return nil }
        try settings.write(encoded: written.data, to: path)
        return written.frameCount
    }
}

extension DecoderRegistry {
    /// Whether a registered decoder of `format` reads its animations (``PipelineCore/AnimatedImageDecoding``).
    func readsAnimations(of format: ImageFormat) -> Bool {
        all.contains { $0.formats.contains(format) && $0 is any AnimatedImageDecoding }
    }
}
