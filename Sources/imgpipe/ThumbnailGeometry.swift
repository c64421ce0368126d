import FaceDetection
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What size `imgpipe thumb` asks for and how it crops: `--size`/`--fill` with the crop options
/// (`--smartcrop`, `--crop`, `--gravity`, `--focal`), parsed in one place.
///
/// As in vipsthumbnail, a crop option turns `--size W×H` (or `N`) into a fill of exactly that
/// box: `-s 200x200 --smartcrop attention` is a 200 × 200 picture, with the window that
/// libvips's attention strategy picks. `--fill W×H` is the same fill with the centre (or the
/// anchor given). `--smartcrop none` is a fit.
struct ThumbnailGeometry {
    var target: TargetSize
    var contentMode: ContentMode
    var anchor: CropAnchor

    /// The options this type reads, in `thumb`'s table.
    struct Options: OptionGroup {
        let size = Option("size", short: "s", "N", .size,
                          "fit inside N×N pixels; WxH fits inside W×H, Wx only bounds the width, xH the height", BoxSize.parser)
        let fill = Option("fill", "WxH", .size, "fill exactly W×H pixels, cropped (centre unless a crop option says otherwise)",
                          .widthByHeight)
        let smartcrop = Option("smartcrop", "HOW", .size, "with --size WxH: fill the box and crop, keeping: none (fit instead), centre, "
                               + "attention (people, subjects: libvips's attention), entropy (the most detailed part) or faces "
                               + "(the faces OpenCV finds, else attention; needs Debian's opencv-data)", SmartCrop.parser)
        let crop = Flag("crop", .size, "with --size WxH: fill the box, centre-cropped (same as --smartcrop centre)")
        let gravity = Option("gravity", "SIDE", .size, "fill and keep this side or corner: centre, north, south, east, west, northeast, "
                             + "northwest, southeast, southwest (or top, bottom, left, right, top-left, …)", ThumbnailGeometry.gravityParser)
        let focal = Option("focal", "X,Y", .size,
                           "fill and centre the crop on this point, X and Y each 0-1 of the picture (0.5,0.5 is the centre)",
                           ThumbnailGeometry.focalParser)
    }

    /// `--smartcrop`'s value: an anchor to fill and crop at, or a fit.
    enum SmartCrop: Sendable {
        case fit
        case anchor(CropAnchor)

        static var parser: ValueParser<SmartCrop> {
            ValueParser { how, option in
                switch how.lowercased() {
                case "none": .fit
                case "centre", "center": .anchor(.center)
                case "attention": .anchor(.attention)
                case "entropy": .anchor(.entropy)
                case "faces": .anchor(.faces)
                default: throw UsageError(message: "\(option) needs none, centre, attention, entropy or faces, got '\(how)'")
                }
            }
        }
    }

    init(_ invocation: Invocation, _ options: Options) throws {
        let anchor = try Self.anchor(invocation, options)
        if let fill = invocation[options.fill] {
            guard anchor?.isFit != true else { throw UsageError(message: "--smartcrop none fits; it cannot go with --fill") }
            self.init(target: .pixels(fill), contentMode: .fill, anchor: anchor?.anchor ?? .center)
            return
        }
        // The free side of `Wx` or `xH` bounds nothing: any picture fits in it (no upscaling).
        let unbounded = 1 << 24
        guard let size = invocation[options.size] else {
            throw UsageError(message: "'imgpipe thumb' needs --size N or --fill WxH")
        }
        let box = (width: size.width ?? unbounded, height: size.height ?? unbounded)
        let target = TargetSize.pixels(PixelSize(width: box.width, height: box.height))
        guard let anchor, !anchor.isFit else {
            self.init(target: target, contentMode: .fit, anchor: .center)
            return
        }
        guard box.width < unbounded, box.height < unbounded else {
            throw UsageError(message: "\(anchor.option) crops to a box: give --size WxH or N, not one side only")
        }
        self.init(target: target, contentMode: .fill, anchor: anchor.anchor)
    }

    private init(target: TargetSize, contentMode: ContentMode, anchor: CropAnchor) {
        self.target = target
        self.contentMode = contentMode
        self.anchor = anchor
    }

    /// The crop option given (at most one), or `nil`: the anchor, or a fit for `--smartcrop none`.
    private static func anchor(_ invocation: Invocation, _ options: Options) throws -> (anchor: CropAnchor, isFit: Bool, option: String)? {
        let crops: [any OptionDeclaration] = [options.smartcrop, options.gravity, options.focal, options.crop]
        let given = crops.filter { invocation.has($0) }.map { "--" + $0.spec.name }
        guard given.count <= 1 else {
            throw UsageError(message: "give one of --smartcrop, --crop, --gravity and --focal, not \(given.joined(separator: " and "))")
        }
        if invocation[options.crop] { return (.center, false, "--crop") }
        switch invocation[options.smartcrop] {
        case .fit?: return (.center, true, "--smartcrop")
        case .anchor(let anchor)?: return (anchor, false, "--smartcrop")
        case nil: break
        }
        if let anchor = invocation[options.gravity] { return (anchor, false, "--gravity") }
        if let anchor = invocation[options.focal] { return (anchor, false, "--focal") }
        return nil
    }

    /// `--focal X,Y`: a point, each 0-1 of the picture.
    static var focalParser: ValueParser<CropAnchor> {
        ValueParser { text, option in
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingSpacesAndTabs()) }
            guard parts.count == 2, let x = parts[0], let y = parts[1], (0...1).contains(x), (0...1).contains(y) else {
                throw UsageError(message: "\(option) needs X,Y with each 0-1 of the picture (0.5,0.5 is the centre), got '\(text)'")
            }
            return .focalPoint(x: x, y: y)
        }
    }

    /// A `--gravity`-style value (`--gravity`, `--overlay-gravity`): ImageMagick's compass points
    /// or CSS-like sides.
    static var gravityParser: ValueParser<CropAnchor> {
        ValueParser { side, option in
            guard let anchor = gravities[side.lowercased().replacingOccurrences(ofASCII: "_", with: "-")] else {
                throw UsageError(message: "\(option) needs centre, north, south, east, west, northeast, northwest, southeast "
                                 + "or southwest (or top, bottom, left, right, top-left, …), got '\(side)'")
            }
            return anchor
        }
    }

    /// `--gravity`'s names: ImageMagick's compass points and CSS-like sides.
    private static let gravities: [String: CropAnchor] = [
        "centre": .center, "center": .center,
        "north": .top, "top": .top, "south": .bottom, "bottom": .bottom,
        "west": .left, "left": .left, "east": .right, "right": .right,
        "northwest": .topLeft, "top-left": .topLeft, "northeast": .topRight, "top-right": .topRight,
        "southwest": .bottomLeft, "bottom-left": .bottomLeft, "southeast": .bottomRight, "bottom-right": .bottomRight,
    ]
}
