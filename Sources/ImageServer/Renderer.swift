import Foundation
import PipelineCore

/// Which output formats a response may have: the one the URL names, or those the client's
/// `Accept` allows, chosen once the source's format is known.
public struct OutputChoice: Sendable, Hashable {
    /// The format the URL names (extension, `f:`), or `nil` to negotiate.
    public var explicit: ImageFormat?
    /// With no explicit format: formats the client accepts that we may pick (AVIF, WebP, JPEG XL),
    /// as the server's `autoAVIF`/`autoWebP`/`autoJXL` allow.
    public var accepted: Set<ImageFormat>

    /// Creates a choice.
    public init(explicit: ImageFormat?, accepted: Set<ImageFormat>) {
        self.explicit = explicit
        self.accepted = accepted
    }
}

/// A finished picture, ready to send.
public struct RenderedImage: Sendable {
    /// The encoded bytes.
    public var data: Data
    /// Their format.
    public var format: ImageFormat
    /// The source's validator (its `ETag`, else `Last-Modified`), or `nil`: what the response's
    /// own `ETag` is derived from, with the options.
    public var sourceValidator: String?
}

/// Turns a source and its ``RenderOptions`` into encoded bytes through the pipeline.
struct Renderer: Sendable {
    let pipeline: ImagePipeline
    let encoders: EncoderRegistry

    func render(_ options: RenderOptions, source: URL, choice: OutputChoice) async throws(ServerError) -> RenderedImage {
        throw ServerError(.internalError, "not built yet")
    }
}
