#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The encoders an app links, by the format they write. A value, like ``DecoderRegistry``.
///
/// Rule for duplicates: **the last registration wins**, as for decoders.
public struct EncoderRegistry: Sendable {
    private var encoders: [any ImageEncoding] = []

    /// An empty registry.
    public init() {}

    /// A registry holding `encoders`, registered in order (so later ones win).
    public init(_ encoders: [any ImageEncoding]) {
        for encoder in encoders { register(encoder) }
    }

    /// Adds `encoder`; it replaces an earlier encoder of the same format.
    public mutating func register(_ encoder: any ImageEncoding) {
        encoders.insert(encoder, at: 0)
    }

    /// A copy with `encoder` registered.
    public func registering(_ encoder: any ImageEncoding) -> EncoderRegistry {
        var copy = self
        copy.register(encoder)
        return copy
    }

    /// Every registered encoder, newest first.
    public var all: [any ImageEncoding] { encoders }

    /// The formats some registered encoder writes.
    public var formats: Set<ImageFormat> { Set(encoders.map(\.format)) }

    /// The newest encoder for `format`, or `nil`.
    public func encoder(for format: ImageFormat) -> (any ImageEncoding)? {
        encoders.first { $0.format == format }
    }

    /// The encoder for `format`, or ``EncodingError/noEncoder(format:)``.
    public func requireEncoder(for format: ImageFormat) throws -> any ImageEncoding {
        if let encoder = encoder(for: format) { return encoder }
        throw EncodingError.noEncoder(format: format)
    }

    /// Encodes `bitmap` as `format` with the registered encoder.
    /// - Throws: ``EncodingError``.
    public func encode(_ bitmap: Bitmap, as format: ImageFormat, options: EncodeOptions = EncodeOptions()) throws -> Data {
        try requireEncoder(for: format).encode(bitmap, options: options)
    }
}
