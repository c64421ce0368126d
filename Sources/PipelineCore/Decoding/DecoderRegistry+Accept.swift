#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DecoderRegistry {
    /// An HTTP `Accept` value for the formats this registry decodes: the MIME type of every
    /// registered format, newest registration first (the app's order of preference, as for
    /// decoding), then `fallback` for servers that answer anything else.
    ///
    /// With `JPEGDecoder`, `PNGDecoder` and `WebPDecoder` registered in that order:
    /// `image/webp,image/png,image/jpeg,image/*;q=0.8,*/*;q=0.5`. A format without a MIME type
    /// is left out; each type appears once. `HTTPDataLoader` sends it when given as its
    /// `headers["Accept"]` (`ImagePipelineKit` does that for you).
    public func acceptHeader(fallback: String = "image/*;q=0.8,*/*;q=0.5") -> String {
        var seen: Set<String> = []
        var types: [String] = []
        for decoder in all {
            for signature in decoder.signatures {
                guard let type = signature.format.mimeType?.lowercased(), seen.insert(type).inserted else { continue }
                types.append(type)
            }
        }
        if !fallback.isEmpty { types.append(fallback) }
        return types.joined(separator: ",")
    }
}
