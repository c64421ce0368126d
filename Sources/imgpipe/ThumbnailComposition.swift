import Foundation
import PipelineCore

/// What `imgpipe thumb` does around the resize: `--trim` before it, and after it (following
/// `--blur`, `--corner-radius` and `--round`) `--overlay`, `--pad` to the box and `--flatten`,
/// parsed and checked in one place before anything is loaded.
///
/// `--background` is the colour of both `--pad` (default transparent) and `--flatten` (default
/// white, as ImageMagick's `-flatten`); a JPEG output flattens what is still transparent onto
/// it too (default black, as vips).
struct ThumbnailComposition {
    /// Cut a uniform border before resizing.
    var trim: Trim?
    /// Pad to the box (`--size`'s W×H) with this colour.
    var padding: (size: PixelSize, colour: RGBAColor)?
    /// Flatten onto this colour.
    var flattening: RGBAColor?
    /// The overlay's source and placement, loaded by ``processors(_:)``.
    var overlay: (url: URL, gravity: CropAnchor, offset: (x: Int, y: Int), opacity: Double, size: Double?)?

    /// The options this type reads, for `thumb`'s option list.
    static let options: [OptionSpec] = [
        .flag("trim", "cut away a uniform border (the top-left pixel's colour) before resizing, as vips find_trim"),
        .value("trim-threshold", "N", "with --trim: how far (0-255) a channel may differ and still be border (default 10)"),
        .flag("pad", "with --size WxH (or N): pad the fitted picture to exactly W×H with --background (default transparent)"),
        .flag("flatten", "composite onto --background (default white), leaving no transparency"),
        .value("overlay", "FILE|URL", "composite this picture (a watermark) over the thumbnail"),
        .value("overlay-gravity", "SIDE", "where the overlay goes: southeast (default), centre, north, … as --gravity"),
        .value("overlay-opacity", "X", "the overlay's opacity, 0-1 (default 1)"),
        .value("overlay-size", "F", "fit the overlay inside F (0-1] of the thumbnail's width and height (default: its own size)"),
        .value("overlay-offset", "X,Y", "move the overlay X,Y pixels in from the edges it sits on (default 0,0)"),
    ]

    init(_ invocation: Invocation, geometry: ThumbnailGeometry) throws {
        let background = try invocation.options["background"].map(OutputSettings.colour)
        if invocation.flag("trim") {
            let threshold = try invocation.options["trim-threshold"].map { text in
                guard let value = Double(text), (0...255).contains(value) else {
                    throw UsageError(message: "--trim-threshold needs a number 0-255, got '\(text)'")
                }
                return value
            }
            trim = Trim(threshold: threshold ?? 10)
        } else if invocation.options["trim-threshold"] != nil {
            throw UsageError(message: "--trim-threshold goes with --trim")
        }
        if invocation.flag("pad") {
            guard geometry.contentMode == .fit, case .pixels(let box) = geometry.target, box.width < 1 << 24, box.height < 1 << 24 else {
                throw UsageError(message: "--pad needs --size WxH or N (a box to pad to), without a crop option")
            }
            padding = (box, background ?? .clear)
        }
        if invocation.flag("flatten") { flattening = background ?? .white }
        try parseOverlay(invocation)
    }

    private mutating func parseOverlay(_ invocation: Invocation) throws {
        let placement = ["overlay-gravity", "overlay-opacity", "overlay-size", "overlay-offset"]
        guard let source = invocation.options["overlay"] else {
            if let given = placement.first(where: { invocation.options[$0] != nil }) {
                throw UsageError(message: "--\(given) goes with --overlay FILE|URL")
            }
            return
        }
        let gravity = try invocation.options["overlay-gravity"].map { try ThumbnailGeometry.gravity($0, option: "--overlay-gravity") }
        func fraction(_ name: String, allowsZero: Bool) throws -> Double? {
            guard let text = invocation.options[name] else { return nil }
            guard let value = Double(text), value <= 1, allowsZero ? value >= 0 : value > 0 else {
                throw UsageError(message: "--\(name) needs a number \(allowsZero ? "0" : "above 0")-1, got '\(text)'")
            }
            return value
        }
        var offset = (x: 0, y: 0)
        if let text = invocation.options["overlay-offset"] {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, let x = parts[0], let y = parts[1], abs(x) <= 100_000, abs(y) <= 100_000 else {
                throw UsageError(message: "--overlay-offset needs X,Y in whole pixels, got '\(text)'")
            }
            offset = (x, y)
        }
        overlay = (try Sources.url(source), gravity ?? .bottomRight, offset,
                   try fraction("overlay-opacity", allowsZero: true) ?? 1, try fraction("overlay-size", allowsZero: false))
    }

    /// Puts the trim on `request`.
    func apply(to request: inout ImageRequest) { request.processing.trim = trim }

    /// The processors after the resize, in order: overlay, padding, flattening. The overlay is
    /// loaded through a pipeline made from `invocation`'s options (its hosts, limits and
    /// caches), as a source would be.
    func processors(_ invocation: Invocation) async throws -> [ImageProcessor] {
        var list = [ImageProcessor]()
        if let overlay {
            let environment = try Environment(invocation, sources: [overlay.url])
            do {
                list.append(try await environment.pipeline.overlay(overlay.url, gravity: overlay.gravity, offset: overlay.offset,
                                                                   opacity: overlay.opacity, relativeSize: overlay.size))
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
