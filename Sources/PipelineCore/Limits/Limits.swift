/// What one source may cost, declared once with the defaults: ``ImagePipeline/Configuration``
/// holds them (``ImagePipeline/Configuration/limits``), ``DecodeOptions`` carries them to the
/// decoders (``DecodeOptions/limits``), and the codecs take their defaults from ``default``. A
/// source over one fails before the memory it would take is allocated, with
/// ``ImagePipelineError/tooManyPixels(_:limit:)`` (the pixel count) or
/// ``ImagePipelineError/overLimit(_:limit:actual:)`` naming the ``Limit``; both are permanent.
public struct Limits: Hashable, Sendable {
    /// The largest stored pixel count (width × height) a decoder may accept, checked from the
    /// header before any pixel buffer is allocated. Default 100,000,000.
    public var maxPixelCount: Int
    /// The most frames an animation may have (``Limit/animationFrames``), for
    /// ``AnimatedImageDecoding`` (every frame decoded): checked from the header or container
    /// before any frame is decoded. A still decode of an animated file (its first frame) is not
    /// refused by it.
    ///
    /// Default 10,000 frames. Real animations are far shorter: the longest in the GIF and
    /// animated WebP corpora has 380 frames; a Telegram sticker is at most 3 s at 60 fps (180
    /// frames); a minute of GIF at its fastest common rate (2 cs a frame, 50 fps) is 3,000.
    /// giflib and gifsicle set no count, and imgproxy's `MAX_ANIMATION_FRAMES` of 1 keeps only
    /// stills. 10,000 lets every real sticker and GIF through while a 2.3 MB GIF of 100,000 tiny
    /// frames (100,000 output files) is refused before its first frame.
    public var maxAnimationFrameCount: Int
    /// The most pixels an animation's frames may have together, canvas width × height × frames
    /// (``Limit/animationPixels``), checked with ``maxAnimationFrameCount``. A still decode of an
    /// animated file is not refused by it.
    ///
    /// Default 1,000,000,000 pixels, ten times the still picture limit (``maxPixelCount``), so
    /// one animation costs at most what ten of the largest stills do (decoding and compositing
    /// every frame; 4 GB of straight RGBA written out at canvas size). Real ones need a small
    /// part of it: the largest in the corpora has 53 MP in all (380 frames of 472×298), a
    /// 512×512 sticker of 180 frames 47 MP; 1080p fits for 480 frames. libvips refuses past
    /// 268 MP (every frame stacked), imgproxy sums the frames against its 50 MP source
    /// resolution. A 46 KB WebP of 1,000 frames on a 10000×10000 canvas (10¹¹ pixels) is
    /// refused from its container.
    public var maxAnimationPixelCount: Int
    /// How many times over all scans together a progressive picture may walk its blocks (each
    /// component's 8×8 blocks once, at full size whatever the scale: every coefficient of every
    /// scan is entropy-decoded), ``Limit/decodeWork`` in blocks.
    ///
    /// Default 16. libjpeg-turbo's own progressive script (`cjpeg`/`jpegtran -progressive`:
    /// 10 scans for colour, 6 for gray, `4 × components + 2` otherwise) walks the blocks 4.7–6
    /// times over (measured on the corpus's pictures made progressive), the spectral-selection
    /// script in libjpeg's `wizard.txt` 4 times; mozjpeg's scan search picks among two AC bands
    /// and up to three successive-approximation bits, well under 16 (not measured: no mozjpeg
    /// here). A crafted file walks them once per scan (1,000 scans of a 10000×10000 picture
    /// took 117 s); one at 16 passes costs about as much entropy decoding as 16 sequential
    /// decodes (2.1 s and 233 MB, most of it libjpeg's coefficients, for a 10000×10000 one with a
    /// release build).
    public var maxScanPasses: Int
    /// The most scans (SOS markers) a picture may have (``Limit/scans``). Default 500, as
    /// TurboJPEG's `TJFLAG_LIMITSCANS` (djpeg's `-maxscans` leaves the number to the caller);
    /// real encoders write 1–20.
    public var maxScans: Int
    /// The largest embedded colour (ICC) profile in bytes (``Limit/colorProfileBytes``), checked
    /// before the profile is assembled. Default 4 MiB (4,194,304): camera and display profiles are
    /// under 100 KB (the corpus's are 16–20 KB, colord's 23 KB at most, Debian's
    /// `icc-profiles-free` 432 KB at most), and the big ones, printer profiles (Fogra, GRACoL,
    /// ECI's ISO Coated), are 0.5–2.5 MB. A JPEG can carry almost 16 MB over 255 APP2 chunks,
    /// which lcms turns into ten times that in memory.
    public var maxColorProfileBytes: Int
    /// The most lookup-table entries of one embedded colour profile (grid points per input
    /// channel raised to the input channels, summed over the profile's distinct
    /// `lut8`/`lut16`/`lutAtoB`/`lutBtoA` tags; ``Limit/colorProfileTableEntries``), checked
    /// before a transform is built. Default 2,097,152 (2²¹): a printer profile's eight or nine
    /// tables of 17⁴ and 33³ points come to about 500,000; this leaves room for a 33⁴ CMYK table
    /// beside them, or one 128³ RGB table.
    public var maxColorProfileTableEntries: Int
    /// The most samples the layers of one picture may have together (``Limit/layerSamples``):
    /// width × height × channels (colour and extra) of every layer blended into it, for JPEG XL
    /// (a still, or each frame of an animation), checked from its frame headers before any
    /// pixel is decoded.
    ///
    /// Default 400,000,000: an RGBA picture at the default ``maxPixelCount``. libjxl decodes
    /// every sample of every layer, whatever the canvas shows, at 8–13 ns a sample here
    /// (release build): a 790-byte 4000×4000 file with 32 extra channels (560 M samples) took
    /// 4.7 s, a 609 KB file of 1,000 blended 1000×1000 layers (3 G samples, one picture) 38 s,
    /// where a 100 MP RGB picture is 300 M. Real files have one layer and 3–5 channels.
    public var maxLayerSamples: Int

    /// Limits with the given values; the defaults are the documented ones.
    public init(maxPixelCount: Int = 100_000_000, maxAnimationFrameCount: Int = 10_000,
                maxAnimationPixelCount: Int = 1_000_000_000, maxScanPasses: Int = 16, maxScans: Int = 500,
                maxColorProfileBytes: Int = 4 << 20, maxColorProfileTableEntries: Int = 1 << 21,
                maxLayerSamples: Int = 400_000_000) {
        self.maxPixelCount = maxPixelCount
        self.maxAnimationFrameCount = maxAnimationFrameCount
        self.maxAnimationPixelCount = maxAnimationPixelCount
        self.maxScanPasses = maxScanPasses
        self.maxScans = maxScans
        self.maxColorProfileBytes = maxColorProfileBytes
        self.maxColorProfileTableEntries = maxColorProfileTableEntries
        self.maxLayerSamples = maxLayerSamples
    }

    /// The documented defaults.
    public static let `default` = Limits()
}
