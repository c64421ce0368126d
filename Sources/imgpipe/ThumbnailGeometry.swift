import Foundation
import PipelineCore

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

    /// The options this type reads, for `thumb`'s option list.
    static let options: [OptionSpec] = [
        .value("size", "N", "(-s) fit inside N×N pixels; WxH fits inside W×H, Wx only bounds the width, xH the height"),
        .value("fill", "WxH", "fill exactly W×H pixels, cropped (centre unless a crop option says otherwise)"),
        .value("smartcrop", "HOW", "with --size WxH: fill the box and crop, keeping: none (fit instead), centre, attention "
               + "(people, subjects: libvips's attention) or entropy (the most detailed part)"),
        .flag("crop", "with --size WxH: fill the box, centre-cropped (same as --smartcrop centre)"),
        .value("gravity", "SIDE", "fill and keep this side or corner: centre, north, south, east, west, northeast, northwest, "
               + "southeast, southwest (or top, bottom, left, right, top-left, …)"),
        .value("focal", "X,Y", "fill and centre the crop on this point, X and Y each 0-1 of the picture (0.5,0.5 is the centre)"),
    ]

    init(_ invocation: Invocation) throws {
        let anchor = try Self.anchor(invocation)
        if let fill = try invocation.size("fill") {
            guard anchor?.isFit != true else { throw UsageError(message: "--smartcrop none fits; it cannot go with --fill") }
            self.init(target: .pixels(PixelSize(width: fill.width, height: fill.height)), contentMode: .fill,
                      anchor: anchor?.anchor ?? .center)
            return
        }
        // The free side of `Wx` or `xH` bounds nothing: any picture fits in it (no upscaling).
        let unbounded = 1 << 24
        guard let box = try invocation.box("size", unbounded: unbounded) else {
            throw UsageError(message: "'imgpipe thumb' needs --size N or --fill WxH")
        }
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
    private static func anchor(_ invocation: Invocation) throws -> (anchor: CropAnchor, isFit: Bool, option: String)? {
        let given = ["smartcrop", "gravity", "focal"].filter { invocation.options[$0] != nil }
            .map { "--\($0)" } + (invocation.flag("crop") ? ["--crop"] : [])
        guard given.count <= 1 else {
            throw UsageError(message: "give one of --smartcrop, --crop, --gravity and --focal, not \(given.joined(separator: " and "))")
        }
        if invocation.flag("crop") { return (.center, false, "--crop") }
        if let how = invocation.options["smartcrop"] {
            switch how.lowercased() {
            case "none": return (.center, true, "--smartcrop")
            case "centre", "center": return (.center, false, "--smartcrop")
            case "attention": return (.attention, false, "--smartcrop")
            case "entropy": return (.entropy, false, "--smartcrop")
            default: throw UsageError(message: "--smartcrop needs none, centre, attention or entropy, got '\(how)'")
            }
        }
        if let side = invocation.options["gravity"] { return (try gravity(side, option: "--gravity"), false, "--gravity") }
        if let text = invocation.options["focal"] {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let x = parts[0], let y = parts[1], (0...1).contains(x), (0...1).contains(y) else {
                throw UsageError(message: "--focal needs X,Y with each 0-1 of the picture (0.5,0.5 is the centre), got '\(text)'")
            }
            return (.focalPoint(x: x, y: y), false, "--focal")
        }
        return nil
    }

    /// The anchor a `--gravity`-style value names (`--gravity`, `--overlay-gravity`): ImageMagick's
    /// compass points or CSS-like sides.
    static func gravity(_ side: String, option: String) throws -> CropAnchor {
        guard let anchor = gravities[side.lowercased().replacingOccurrences(of: "_", with: "-")] else {
            throw UsageError(message: "\(option) needs centre, north, south, east, west, northeast, northwest, southeast "
                             + "or southwest (or top, bottom, left, right, top-left, …), got '\(side)'")
        }
        return anchor
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
