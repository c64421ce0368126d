/// The limits on what one source may cost besides its pixel count
/// (``ImagePipelineError/tooManyPixels(_:limit:)``) and its body bytes
/// (``ImagePipelineError/tooLarge(limit:actual:)``). A source over one fails with
/// ``ImagePipelineError/overLimit(_:limit:actual:)``, which is permanent: the answer is the same
/// next time. Each limit's default is documented where it is set.
public enum SourceLimit: String, Hashable, Sendable, CaseIterable {
    /// Frames in one animation.
    case animationFrames
    /// Pixels of every frame of one animation together (canvas width × height × frames).
    case animationPixels
    /// A codec's work on one picture beyond its pixels, in the codec's own unit: for JPEG, the
    /// blocks its progressive scans walk.
    case decodeWork
    /// The scans of one progressive (or multi-scan) picture.
    case scans
    /// The bytes of one embedded colour (ICC) profile.
    case colorProfileBytes
    /// The colour lookup table entries of one embedded colour profile (grid points per channel
    /// raised to the input channels, over its tables).
    case colorProfileTableEntries

    /// What the limit counts, as the start of a sentence: "the animation's frame count".
    public var counting: String {
        switch self {
        case .animationFrames: return "the animation's frame count"
        case .animationPixels: return "the animation's pixel count over all frames"
        case .decodeWork: return "the decoding work (blocks walked by all scans)"
        case .scans: return "the picture's scan count"
        case .colorProfileBytes: return "the colour profile's size in bytes"
        case .colorProfileTableEntries: return "the colour profile's lookup table entry count"
        }
    }
}
