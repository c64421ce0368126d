import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What `imgpipe thumb` does around the resize: `--rotate`, `--flip`, `--flop` and `--trim`
/// before it, and after it (following
/// `--blur`, `--corner-radius` and `--round`) `--overlay`, `--pad` to the box and `--flatten`,
/// parsed and checked in one place before anything is loaded.
///
/// `--background` is the colour of both `--pad` (default transparent) and `--flatten` (default
/// white, as ImageMagick's `-flatten`); a JPEG output flattens what is still transparent onto
/// it too (default black, as vips).
struct ThumbnailComposition {
    /// Cut a uniform border before resizing.
    var trim: Trim?
    /// `--rotate` then `--flop` and `--flip`, after the EXIF orientation and before the resize
    /// (the size and crop apply to the turned picture).
    var transform = ImageOrientation.up
    /// Pad to the box (`--size`'s W×H) with this colour.
    var padding: (size: PixelSize, colour: RGBAColor)?
    /// Flatten onto this colour.
    var flattening: RGBAColor?
    /// The overlay's source and placement, loaded by ``processors(_:)``.
    var overlay: (url: URL, gravity: CropAnchor, offset: (x: Int, y: Int), opacity: Double, size: Double?)?

    /// Whether `--pad` or `--flatten` uses `--background` (so any output format takes it).
    private(set) var usesBackground = false
    /// The box the thumbnail fits in or fills (`--size`, `--fill`): the overlay is drawn on a
    /// picture no larger, so with `--overlay-size` it is decoded for that box, not at its own size.
    private var box: PixelSize?

    /// The options this type reads, in `thumb`'s table.
    struct Options: OptionGroup {
        let trim = Flag("trim", .processing, "cut away a uniform border (the top-left pixel's colour) before resizing, as vips find_trim")
        let trimThreshold = Option("trim-threshold", "N", .processing,
                                   "with --trim: how far (0-255) a channel may differ and still be border (default 10)",
                                   ValueParser { text, option in
                                       guard let value = Double(text), (0...255).contains(value) else {
                                           throw UsageError(message: "\(option) needs a number 0-255, got '\(text)'")
                                       }
                                       return value
                                   })
        let rotate = Option("rotate", "90|180|270", .processing,
                            "turn the picture clockwise after its EXIF orientation, before the resize (the size applies to the turned picture)",
                            .oneOf({ ["90", "180", "270"] }, { ["90": 1, "180": 2, "270": 3][$0] }))
        let flip = Flag("flip", .processing, "mirror top to bottom (ImageMagick's -flip), after --rotate")
        let flop = Flag("flop", .processing, "mirror left to right (ImageMagick's -flop), after --rotate")
        let pad = Flag("pad", .processing, "with --size WxH (or N): pad the fitted picture to exactly W×H with --background (default transparent)")
        let flatten = Flag("flatten", .processing, "composite onto --background (default white), leaving no transparency")
        let overlay = Option("overlay", "FILE|URL", .processing, "composite this picture (a watermark) over the thumbnail", .text)
        let overlayGravity = Option("overlay-gravity", "SIDE", .processing,
                                    "where the overlay goes: southeast (default), centre, north, … as --gravity", ThumbnailGeometry.gravityParser)
        let overlayOpacity = Option("overlay-opacity", "X", .processing, "the overlay's opacity, 0-1 (default 1)", .fraction(allowsZero: true))
        let overlaySize = Option("overlay-size", "F", .processing,
                                 "fit the overlay inside F (0-1] of the thumbnail's width and height (default: its own size)",
                                 .fraction(allowsZero: false))
        let overlayOffset = Option("overlay-offset", "X,Y", .processing,
                                   "move the overlay X,Y pixels in from the edges it sits on (default 0,0)",
                                   ValueParser { text, option in
                                       let parts = text.split(separator: ",", omittingEmptySubsequences: false)
                                           .map { Int($0.trimmingSpacesAndTabs()) }
                                       let limit = -100_000...100_000  // `abs` of Int.min would trap
                                       guard parts.count == 2, let x = parts[0], let y = parts[1], limit.contains(x), limit.contains(y) else {
                                           throw UsageError(message: "\(option) needs X,Y in whole pixels, got '\(text)'")
                                       }
                                       return Offset(x: x, y: y)
                                   })
    }

    /// `--overlay-offset`'s value.
    struct Offset: Sendable {
        var x: Int, y: Int
    }

    init(_ invocation: Invocation, _ options: Options, geometry: ThumbnailGeometry) throws {
        let background = invocation[EncodingOptions.declared.background]
        if case .pixels(let size) = geometry.target { box = size }
        transform = ImageOrientation(quarterTurnsClockwise: invocation[options.rotate] ?? 0, flop: invocation[options.flop],
                                     flip: invocation[options.flip])
        if invocation[options.trim] {
            trim = Trim(threshold: invocation[options.trimThreshold] ?? 10)
        } else if invocation.has(options.trimThreshold) {
            throw UsageError(message: "--trim-threshold goes with --trim")
        }
        if invocation[options.pad] {
            guard geometry.contentMode == .fit, case .pixels(let box) = geometry.target else {
                throw UsageError(message: "--pad needs --size WxH or N (a box to pad to), without a crop option")
            }
            // The padded canvas is allocated whole: its box is bounded as a picture is.
            let limit = Limits.default.maxPixelCount
            guard box.width < 1 << 24, box.height < 1 << 24, box.width.multipliedReportingOverflow(by: box.height).partialValue <= limit else {
                throw UsageError(message: "--pad's box \(box.width)×\(box.height) is too large: at most \(limit) pixels, and under 16777216 a side")
            }
            padding = (box, background ?? .clear)
        }
        if invocation[options.flatten] { flattening = background ?? .white }
        usesBackground = invocation[options.pad] || invocation[options.flatten]
        try parseOverlay(invocation, options)
    }

    private mutating func parseOverlay(_ invocation: Invocation, _ options: Options) throws {
        guard let source = invocation[options.overlay] else {
            let placement: [any OptionDeclaration] = [options.overlayGravity, options.overlayOpacity, options.overlaySize, options.overlayOffset]
            if let given = invocation.firstGiven(placement) {
                throw UsageError(message: "--\(given.name) goes with --overlay FILE|URL")
            }
            return
        }
        let offset = invocation[options.overlayOffset] ?? Offset(x: 0, y: 0)
        overlay = (try Sources.url(source), invocation[options.overlayGravity] ?? .bottomRight, (offset.x, offset.y),
                   invocation[options.overlayOpacity] ?? 1, invocation[options.overlaySize])
    }

    /// Puts the turn and the trim on `request`.
    func apply(to request: inout ImageRequest) {
        request.processing.transform = transform
        request.processing.trim = trim
    }

    /// The processors after the resize, in order: overlay, padding, flattening. The overlay is
    /// loaded through a pipeline made from `invocation`'s options (its hosts, limits and
    /// caches), as a source would be.
    func processors(_ invocation: Invocation) async throws -> [ImageProcessor] {
        var list = [ImageProcessor]()
        if let overlay {
            let environment = try Environment(invocation, sources: [overlay.url])
            do {
                list.append(try await environment.pipeline.overlay(overlay.url, gravity: overlay.gravity, offset: overlay.offset,
                                                                   opacity: overlay.opacity, relativeSize: overlay.size,
                                                                   drawnWithin: box))
                await environment.finish()
            } catch {
                await environment.finish()
                throw OverlayFailure(description: "--overlay: \(Sources.failure(error, for: overlay.url))")
            }
        }
        if let padding { list.append(.padded(to: padding.size, background: padding.colour)) }
        if let flattening { list.append(.flattened(onto: flattening)) }
        return list
    }
}

/// The overlay could not be loaded (exit 1, the message naming it).
struct OverlayFailure: Error, CustomStringConvertible {
    let description: String
}
