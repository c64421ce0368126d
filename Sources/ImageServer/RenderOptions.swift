import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The processing options of one server URL, typed: what imgproxy's URL grammar says
/// (`/<signature>/rs:fill:300:200/g:sm/q:80/plain/<source>@webp`), after presets are expanded.
/// `ImgproxyURL` parses it; the renderer turns it into an
/// [`ImageRequest`](/documentation/pipelinecore/imagerequest), its processors and an encode.
/// Every default is imgproxy's.
public struct RenderOptions: Hashable, Sendable {
    /// imgproxy's `resizing_type`.
    public enum ResizingType: String, Hashable, Sendable, CaseIterable {
        /// Fit inside width × height, keeping the aspect.
        case fit
        /// Fill width × height exactly, cropping what is left over (at the gravity).
        case fill
        /// As `fill`, but when the source is smaller than the box, the box is scaled down to
        /// keep its aspect instead of enlarging the picture.
        case fillDown = "fill-down"
        /// Stretch to width × height, ignoring the aspect.
        case force
        /// `fill` when the source and the box are both portrait or both landscape, else `fit`.
        case auto
    }

    /// Where a crop, an extension or a watermark sits: an anchor (a compass point, `sm`
    /// (attention) or a focal point `fp:x:y`), moved by offsets in pixels (imgproxy's
    /// `g:%type:%x_offset:%y_offset`).
    public struct Gravity: Hashable, Sendable {
        /// The anchor; `.center` by default.
        public var anchor: CropAnchor
        /// Offsets in pixels of the output (multiplied by `dpr` when applied), positive to the
        /// right and down from the anchor's side, as imgproxy's.
        public var offsetX: Double
        public var offsetY: Double

        /// Creates a gravity.
        public init(_ anchor: CropAnchor = .center, offsetX: Double = 0, offsetY: Double = 0) {
            self.anchor = anchor
            self.offsetX = offsetX
            self.offsetY = offsetY
        }
    }

    /// imgproxy's `crop:%width:%height:%gravity`: a region cut from the source before the
    /// resize. A side of 0 is the source's whole side; a side below 1 is a fraction of it.
    public struct Crop: Hashable, Sendable {
        public var width: Double
        public var height: Double
        /// `nil`: the request's ``RenderOptions/gravity``.
        public var gravity: Gravity?

        /// Creates a crop.
        public init(width: Double, height: Double, gravity: Gravity? = nil) {
            self.width = width
            self.height = height
            self.gravity = gravity
        }
    }

    /// imgproxy's `trim:%threshold:%color:%equal_hor:%equal_ver`.
    public struct TrimOptions: Hashable, Sendable {
        public var threshold: Double
        /// `nil`: the top-left pixel's colour.
        public var color: RGBAColor?
        public var equalHorizontal: Bool
        public var equalVertical: Bool

        /// Creates trim options.
        public init(threshold: Double, color: RGBAColor? = nil, equalHorizontal: Bool = false, equalVertical: Bool = false) {
            self.threshold = threshold
            self.color = color
            self.equalHorizontal = equalHorizontal
            self.equalVertical = equalVertical
        }
    }

    /// imgproxy's `padding:%top:%right:%bottom:%left`, in pixels of the output before `dpr`.
    public struct Padding: Hashable, Sendable {
        public var top: Int, right: Int, bottom: Int, left: Int

        /// Creates padding.
        public init(top: Int, right: Int, bottom: Int, left: Int) {
            self.top = top
            self.right = right
            self.bottom = bottom
            self.left = left
        }
    }

    /// imgproxy's `watermark:%opacity:%position:%x_offset:%y_offset:%scale`: the configured
    /// watermark picture over the result.
    public struct Watermark: Hashable, Sendable {
        /// 0–1, multiplied by the configured base opacity.
        public var opacity: Double
        /// Where it sits; imgproxy's default is the centre.
        public var position: Gravity
        /// 0: the watermark's own size; otherwise the fraction of the result's width.
        public var scale: Double

        /// Creates a watermark placement.
        public init(opacity: Double, position: Gravity = Gravity(), scale: Double = 0) {
            self.opacity = opacity
            self.position = position
            self.scale = scale
        }
    }

    public var resizingType: ResizingType = .fit
    /// 0: computed from the other side (or the source's own when both are 0).
    public var width = 0
    public var height = 0
    /// Multiplies width, height, padding and offsets; 1 by default.
    public var dpr = 1.0
    /// Allow scaling above the source's size (default `false`).
    public var enlarge = false
    /// Extend (pad) the result to the requested size when it came out smaller: the gravity of
    /// the picture inside the padded box, or `nil` for no extension.
    public var extend: Gravity?
    /// Where a fill crops (imgproxy's default: the centre).
    public var gravity = Gravity()
    public var crop: Crop?
    public var trim: TrimOptions?
    public var padding: Padding?
    /// Rotate by EXIF orientation (imgproxy's default: yes).
    public var autoRotate = true
    /// imgproxy's `rotate|rot:%angle`: degrees clockwise after the EXIF orientation, a multiple
    /// of 90 kept as 0, 90, 180 or 270 (a negative angle turns counter-clockwise). Default 0.
    public var rotate = 0
    /// imgproxy's `flip|fl:%horizontal:%vertical`, after the rotation: mirror left to right.
    public var flipHorizontal = false
    /// Mirror top to bottom, after the rotation and ``flipHorizontal``.
    public var flipVertical = false

    /// ``rotate``, ``flipHorizontal`` and ``flipVertical`` as one turn applied after the EXIF
    /// orientation ([`ProcessingOptions.transform`](/documentation/pipelinecore/processingoptions/transform)),
    /// in imgproxy's order: the rotation, then the flips.
    public var transform: ImageOrientation {
        ImageOrientation(quarterTurnsClockwise: rotate / 90, flop: flipHorizontal, flip: flipVertical)
    }

    /// The size the geometry starts from for a source of `info`: its stored size turned by its
    /// EXIF orientation (unless ``autoRotate`` is off), then by ``transform``.
    public func orientedSize(of info: ImageInfo) -> PixelSize {
        (autoRotate ? info.orientation : .up).followed(by: transform).uprightSize(of: info.size)
    }
    /// Flatten alpha onto this colour (and the colour of padding and extension); `nil`: keep alpha.
    public var background: RGBAColor?
    /// Gaussian blur sigma, or `nil`.
    public var blur: Double?
    /// Sharpen sigma (`ImageProcessor.sharpen(sigma:)` with
    /// libvips's other defaults, as imgproxy calls `vips_sharpen`), or `nil`.
    public var sharpen: Double?
    /// imgproxy Pro's `brightness`: levels added to R, G and B, −255…255 (0, the default, adds
    /// none): [`ColorAdjustment/brightnessOffset`](/documentation/pipelinecore/coloradjustment/brightnessoffset).
    public var brightness = 0
    /// imgproxy Pro's `contrast`, a factor (1, the default, leaves the picture): Pillow's
    /// `ImageEnhance.Contrast`, [`ColorAdjustment/contrast`](/documentation/pipelinecore/coloradjustment/contrast).
    public var contrast = 1.0
    /// imgproxy Pro's `saturation`, a factor (1, the default, leaves the picture): Pillow's
    /// `ImageEnhance.Color`, [`ColorAdjustment/saturation`](/documentation/pipelinecore/coloradjustment/saturation).
    public var saturation = 1.0
    public var watermark: Watermark?
    /// Output carries no EXIF/XMP (ours never does; accepted for compatibility).
    public var stripMetadata = true
    /// Convert to sRGB and embed no profile (imgproxy's default); `false` keeps the source's profile.
    public var stripColorProfile = true
    /// 1–100, or `nil` for the format's default.
    public var quality: Int?
    /// Per-format quality, overriding ``quality``.
    public var formatQuality: [ImageFormat: Int] = [:]
    /// The output format; `nil`: from the URL's extension, else negotiated from `Accept`.
    public var format: ImageFormat?
    /// Changes the cache key and nothing else.
    public var cacheBuster: String?
    /// The URL answers 404 after this moment.
    public var expires: Date?
    /// `Content-Disposition`'s file name (without extension; the format's is added).
    public var filename: String?
    /// `Content-Disposition: attachment` instead of `inline`.
    public var returnAttachment = false
    /// Refuse sources above this many megapixels (422); `nil`: the server's limit.
    public var maxSourceResolution: Double?
    /// Refuse animations of more frames (422); `nil`: the server's limit. 1 makes a still.
    public var maxAnimationFrames: Int?

    /// imgproxy's defaults.
    public init() {}
}

extension RenderOptions {
    /// These options with `anchor` in place of `gravity:sm`'s ``PipelineCore/CropAnchor/attention``
    /// (``ImageServer/Configuration/smartAnchor``).
    func withSmartAnchor(_ anchor: CropAnchor) -> RenderOptions {
        var options = self
        if options.gravity.anchor == .attention { options.gravity.anchor = anchor }
        return options
    }
}
