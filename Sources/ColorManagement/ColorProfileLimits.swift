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
    /// The largest profile in bytes. Default 4 MiB (4 194 304): camera and display profiles are
    /// under 100 KB (the corpus's are 16–20 KB, colord's 23 KB at most, Debian's
    /// `icc-profiles-free` 432 KB at most), and the big ones, printer profiles (Fogra, GRACoL,
    /// ECI's ISO Coated), are 0.5–2.5 MB. A JPEG can carry almost 16 MB over 255 APP2 chunks,
    /// which lcms turns into ten times that in memory.
    public var maxByteCount: Int
    /// The most lookup-table entries (grid points per input channel raised to the input
    /// channels, summed over the profile's distinct `lut8`/`lut16`/`lutAtoB`/`lutBtoA` tags).
    /// Default 2 097 152 (2²¹): a printer profile's eight or nine tables of 17⁴ and 33³ points
    /// come to about 500 000; this leaves room for a 33⁴ CMYK table beside them, or one 128³
    /// RGB table.
    public var maxTableEntries: Int

    /// Limits with the given values; the defaults are the documented ones.
    public init(maxByteCount: Int = 4 << 20, maxTableEntries: Int = 1 << 21) {
        self.maxByteCount = maxByteCount
        self.maxTableEntries = maxTableEntries
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
