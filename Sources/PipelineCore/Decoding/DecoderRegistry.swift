#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The decoders an app links, in the order they are asked. Built by the app and handed to
/// ``ImagePipeline/Configuration``; a value, so tests build their own and nothing leaks.
///
/// The registry chooses by magic bytes: each decoder declares its ``ImageDecoding/signatures``
/// (a third party's format as much as the shipped ones), and the sniffer is built from what is
/// registered. The core names formats it knows only in messages ("GIF data, but no GIF
/// decoder is registered: link CodecGIF and register `GIFDecoder()`").
///
/// Rule for duplicates: **the last registration wins.** Decoders are asked newest first, so
/// registering a second decoder for a format that already has one overrides it (the first
/// stays as a fallback for data the newer one declines in ``ImageDecoding/canDecode(_:)``).
public struct DecoderRegistry: Sendable {
    private var decoders: [any ImageDecoding] = []

    /// An empty registry.
    public init() {}

    /// A registry holding `decoders`, registered in order (so later ones win).
    public init(_ decoders: [any ImageDecoding]) {
        for decoder in decoders { register(decoder) }
    }

    /// Adds `decoder`; it is asked before every decoder registered earlier.
    public mutating func register(_ decoder: any ImageDecoding) {
        decoders.insert(decoder, at: 0)
    }

    /// A copy with `decoder` registered: for building a registry in one expression.
    public func registering(_ decoder: any ImageDecoding) -> DecoderRegistry {
        var copy = self
        copy.register(decoder)
        return copy
    }

    /// Every registered decoder, the one asked first first.
    public var all: [any ImageDecoding] { decoders }

    /// The formats some registered decoder handles.
    public var formats: Set<ImageFormat> { decoders.reduce(into: []) { $0.formUnion($1.formats) } }

    /// The format of `data` by the signatures of the registered decoders (newest first), or `nil`.
    public func format(of data: Data) -> ImageFormat? {
        data.withUnsafeBytes { raw in
            let head = UnsafeRawBufferPointer(rebasing: raw.prefix(ImageFormat.sniffLength))
            for decoder in decoders {
                if let signature = decoder.signatures.first(where: { $0.matches(head) }) { return signature.format }
            }
            return nil
        }
    }

    /// The decoder for `data`: the newest one whose `canDecode` accepts it.
    public func decoder(for data: Data) -> (any ImageDecoding)? {
        decoders.first { $0.canDecode(data) }
    }

    /// The decoder for `data`, or ``ImagePipelineError/noDecoder(format:leadingBytes:)`` naming
    /// what the data looks like ("GIF data, but no GIF decoder is registered"; "… it starts
    /// with \"<!doctype html\"").
    public func requireDecoder(for data: Data) throws -> any ImageDecoding {
        if let decoder = decoder(for: data) { return decoder }
        let format = ImageFormat.sniff(data)
        throw ImagePipelineError.noDecoder(format: format, leadingBytes: format == nil ? Data(data.prefix(ImageFormat.sniffLength)) : Data())
    }
}
