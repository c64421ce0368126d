import PipelineCore

/// The limits on one embedded ICC profile, checked before the profile is assembled (its bytes)
/// and before a transform is built (its lookup tables). A profile over one fails the decode with
/// `ImagePipelineError.overLimit(_:limit:actual:)` (`Limit.colorProfileBytes`
/// or `Limit.colorProfileTableEntries`), which is permanent.
///
/// Why a refusal and not the pixels unconverted with a warning: both limits sit far above what
/// real profiles use, so a profile over them is hostile or broken; refusing is what every other
/// limit on a source does, it is typed (a caller who needs more raises the limit), and it never
/// hands out a picture in the wrong colours as if it were fine.
public struct ColorProfileLimits: Hashable, Sendable {
    /// The largest profile in bytes: `Limits.maxColorProfileBytes`, where the default (4 MiB)
    /// and its reason are.
    public var maxByteCount: Int
    /// The most lookup-table entries: `Limits.maxColorProfileTableEntries`, where the default
    /// (2²¹) and its reason are.
    public var maxTableEntries: Int

    /// Limits with the given values; the defaults are `Limits.default`'s.
    public init(maxByteCount: Int = Limits.default.maxColorProfileBytes,
                maxTableEntries: Int = Limits.default.maxColorProfileTableEntries) {
        self.maxByteCount = maxByteCount
        self.maxTableEntries = maxTableEntries
    }

    /// The colour profile limits of `limits`.
    public init(_ limits: Limits) {
        self.init(maxByteCount: limits.maxColorProfileBytes, maxTableEntries: limits.maxColorProfileTableEntries)
    }

    /// The default limits.
    public static let `default` = ColorProfileLimits()

    /// Throws `Limit.colorProfileBytes` when a profile of `byteCount`
    /// bytes is over ``maxByteCount``: call it with the chunk sizes summed, before assembling.
    public func check(byteCount: Int) throws(ImagePipelineError) {
        guard byteCount <= maxByteCount else {
            throw .overLimit(.colorProfileBytes, limit: maxByteCount, actual: byteCount)
        }
    }
}
