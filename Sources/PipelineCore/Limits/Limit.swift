/// The name of a limit that refused something: one vocabulary for
/// ``ImagePipelineError/overLimit(_:limit:actual:)`` (what one source may cost besides its pixel
/// count and body bytes, refused for good: the answer is the same next time) and
/// ``ImagePipelineError/overloaded(_:limit:detail:)`` (the pipeline or its loader was too busy
/// to take the request; asking again later may succeed). The values of the source limits are
/// declared once, with their defaults, in ``Limits``.
///
/// Open, like ``ImageFormat``: a loader or codec with a limit of its own names it with
/// `Limit("…")`, no change here needed. Two limits are one when their ``rawValue``s are.
public struct Limit: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The limit's name, as messages show it.
    public let rawValue: String
    /// What the limit counts, as the start of a sentence ("the animation's frame count"), for
    /// messages of ``ImagePipelineError/overLimit(_:limit:actual:)``.
    public let counting: String

    /// The limit named `rawValue`: one of those below when it has its name.
    public init(rawValue: String) {
        self = Self.known.first { $0.rawValue == rawValue } ?? Limit(rawValue, counting: "the \(rawValue)")
    }

    /// A limit named `name`, counting `counting` (by default "the `name`").
    public init(_ name: String, counting: String? = nil) {
        self.rawValue = name
        self.counting = counting ?? "the \(name)"
    }

    // MARK: What one source may cost (permanent: `overLimit`)

    /// Frames in one animation (``Limits/maxAnimationFrameCount``).
    public static let animationFrames = Limit("animationFrames", counting: "the animation's frame count")
    /// Pixels of every frame of one animation together, canvas width × height × frames
    /// (``Limits/maxAnimationPixelCount``).
    public static let animationPixels = Limit("animationPixels", counting: "the animation's pixel count over all frames")
    /// The memory one animation's frame decoder holds at once, in bytes: its canvases, any
    /// earlier canvas it keeps and the frame it hands out
    /// (``AnimatedImageDecoding/estimatedAnimationMemory(_:)``), at most what the largest still
    /// picture takes (``DecodeOptions/maxAnimationCanvasBytes``).
    public static let animationCanvases = Limit("animationCanvases", counting: "the memory of the animation's canvases in bytes")
    /// A codec's work on one picture beyond its pixels, in the codec's own unit: for JPEG, the
    /// blocks its progressive scans walk (``Limits/maxScanPasses``).
    public static let decodeWork = Limit("decodeWork", counting: "the decoding work (blocks walked by all scans)")
    /// The scans of one progressive (or multi-scan) picture (``Limits/maxScans``).
    public static let scans = Limit("scans", counting: "the picture's scan count")
    /// The samples of the layers a decoder blends into one picture, width × height × channels
    /// summed over them (``Limits/maxLayerSamples``).
    public static let layerSamples = Limit("layerSamples", counting: "the picture's sample count over all its layers")
    /// The layers a decoder blends into one picture, counted against
    /// ``Limits/maxAnimationFrameCount`` (a JPEG XL file's frame headers are walked that far).
    public static let layers = Limit("layers", counting: "the picture's layer count")
    /// The bytes of one embedded colour (ICC) profile (``Limits/maxColorProfileBytes``).
    public static let colorProfileBytes = Limit("colorProfileBytes", counting: "the colour profile's size in bytes")
    /// The colour lookup table entries of one embedded colour profile, grid points per channel
    /// raised to the input channels, over its tables (``Limits/maxColorProfileTableEntries``).
    public static let colorProfileTableEntries = Limit("colorProfileTableEntries",
                                                       counting: "the colour profile's lookup table entry count")

    // MARK: What the pipeline and its loader take at once (transient: `overloaded`)

    /// The most memory the pipeline's requests in flight may hold together
    /// (``ImagePipeline/Configuration/requestMemoryBudget``).
    public static let requestsInFlight = Limit("requests in flight")
    /// The most requests that may wait for a connection at once.
    public static let queuedRequests = Limit("queued requests")
    /// The most bytes the requests waiting for a connection may hold together.
    public static let queuedBytes = Limit("queued bytes")
    /// How long a request may wait for a connection: its deadline passed before it was sent.
    public static let queueTime = Limit("time in the queue")
    /// The most bytes the downloads in flight may hold together.
    public static let downloadMemory = Limit("download memory")
    /// The most transfers that gave up their connection slots to other hosts' requests and go on.
    public static let longTransfers = Limit("long transfers")

    /// The limits of one source, those ``ImagePipelineError/overLimit(_:limit:actual:)`` names.
    public static let sourceLimits: [Limit] = [
        .animationFrames, .animationPixels, .animationCanvases, .decodeWork, .scans, .colorProfileBytes, .colorProfileTableEntries,
        .layerSamples, .layers,
    ]
    private static let known = sourceLimits + [.requestsInFlight, .queuedRequests, .queuedBytes, .queueTime, .downloadMemory, .longTransfers]

    /// ``rawValue``.
    public var description: String { rawValue }

    /// Whether the two have one name.
    public static func == (lhs: Limit, rhs: Limit) -> Bool { lhs.rawValue == rhs.rawValue }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}

/// The limits of one source, before ``Limit`` named them all.
@available(*, deprecated, renamed: "Limit")
public typealias SourceLimit = Limit

/// The load limits, before ``Limit`` named them all.
@available(*, deprecated, renamed: "Limit")
public typealias OverloadLimit = Limit
