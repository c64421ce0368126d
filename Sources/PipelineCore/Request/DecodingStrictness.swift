/// What a request does with a damaged file the codec can still partly decode: a JPEG cut off
/// mid-download, a PNG with a bad checksum in a late chunk. The choice is in every
/// ``ImageRequest`` initialiser (`decoding:`) and is stored as
/// ``ProcessingOptions/strictDecoding``, part of the memory key (a lenient result never answers
/// a strict request).
///
/// The default is ``lenient``, as in Nuke and browsers: on a screen a partly grey picture is
/// better than none. A server that writes what it decodes to files or caches (thumbnails,
/// renditions) should choose ``strict``: a truncated upload then fails, and is retried or
/// reported, instead of a grey picture being stored and served from then on; it can make every
/// request strict at once with ``ImagePipeline/Configuration/decodingStrictness``.
public enum DecodingStrictness: Hashable, Sendable {
    /// Return what could be decoded (the missing rows of a truncated JPEG grey) with the codec's
    /// complaints in ``ImageResponse/warnings``. The default: for display.
    case lenient
    /// Fail where the codec warns: ``ImagePipelineError/decodingFailed(_:underlying:)`` with the
    /// first warning as ``ImagePipelineError/corruptData(format:message:)`` inside. For servers
    /// and tools that store or publish the result.
    case strict
}
