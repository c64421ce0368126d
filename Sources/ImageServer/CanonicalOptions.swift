import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension RenderOptions {
    /// A deterministic text of every option that changes the output's bytes, the same for
    /// equal options however the URL spelled them (long or short names, presets, the order of
    /// `format_quality`'s pairs): what the server keys processed results by.
    ///
    /// imgproxy's short names, `/`-separated, in a fixed order, each only when it differs from
    /// the default: `rt:fill/w:300/h:200/g:attention:0:0/q:80`; the default options are the
    /// empty text. `expires`, `filename` and `return_attachment` change headers only and are
    /// left out; `cachebuster` is in (changing the key is its purpose), percent-encoded like every
    /// free text so that no value can pose as another option.
    public var canonical: String {
        var parts: [String] = []
        func add(_ name: String, _ values: [String]) { parts.append(([name] + values).joined(separator: ":")) }
        if resizingType != .fit { add("rt", [resizingType.rawValue]) }
        if width != 0 { add("w", [String(width)]) }
        if height != 0 { add("h", [String(height)]) }
        if dpr != 1 { add("dpr", [Self.number(dpr)]) }
        if enlarge { add("el", ["1"]) }
        if let extend { add("ex", Self.text(extend)) }
        if gravity != Gravity() { add("g", Self.text(gravity)) }
        if let crop { add("c", [Self.number(crop.width), Self.number(crop.height)] + (crop.gravity.map(Self.text) ?? [])) }
        if let trim {
            add("t", [Self.number(trim.threshold), trim.color?.description ?? "", trim.equalHorizontal ? "1" : "0", trim.equalVertical ? "1" : "0"])
        }
        if let padding { add("pd", [padding.top, padding.right, padding.bottom, padding.left].map { String($0) }) }
        if !autoRotate { add("ar", ["0"]) }
        // The turn, not its spelling: `rot:180` and `fl:1:1` are one picture, so one key.
        let turn = Self.turn(transform)
        if turn.degrees != 0 { add("rot", [String(turn.degrees)]) }
        if turn.mirrored { add("fl", ["1", "0"]) }
        if let background { add("bg", [background.description]) }
        if let blur { add("bl", [Self.number(blur)]) }
        if let sharpen { add("sh", [Self.number(sharpen)]) }
        if brightness != 0 { add("br", [String(brightness)]) }
        if contrast != 1 { add("co", [Self.number(contrast)]) }
        if saturation != 1 { add("sa", [Self.number(saturation)]) }
        if let watermark { add("wm", [Self.number(watermark.opacity)] + Self.text(watermark.position) + [Self.number(watermark.scale)]) }
        if !stripMetadata { add("sm", ["0"]) }
        if !stripColorProfile { add("scp", ["0"]) }
        if let quality { add("q", [String(quality)]) }
        if !formatQuality.isEmpty {
            add("fq", formatQuality.sorted { $0.key.rawValue < $1.key.rawValue }.flatMap { [Self.escaped($0.key.rawValue), String($0.value)] })
        }
        if let format { add("f", [Self.escaped(format.rawValue)]) }
        if let cacheBuster { add("cb", [Self.escaped(cacheBuster)]) }
        if let maxSourceResolution { add("msr", [Self.number(maxSourceResolution)]) }
        if let maxAnimationFrames { add("maf", [String(maxAnimationFrames)]) }
        return parts.joined(separator: "/")
    }

    /// `transform` as a clockwise rotation then, when `mirrored`, a mirror left to right: one
    /// spelling of each of the eight turns.
    private static func turn(_ transform: ImageOrientation) -> (degrees: Int, mirrored: Bool) {
        for quarters in 0..<4 {
            for mirrored in [false, true]
            where ImageOrientation(quarterTurnsClockwise: quarters, flop: mirrored) == transform {
                return (quarters * 90, mirrored)
            }
        }
        return (0, false)
    }

    private static func text(_ gravity: Gravity) -> [String] {
        [escaped(gravity.anchor.description), number(gravity.offsetX), number(gravity.offsetY)]
    }

    /// The shortest text that reads back as `value`, with `-0` as `0` (equal values, one text).
    private static func number(_ value: Double) -> String { value == 0 ? "0" : "\(value)" }

    /// Free text percent-encoded outside RFC 3986's unreserved characters, so it holds no `:` or `/`.
    private static func escaped(_ text: String) -> String {
        text.percentEncoded(allowing: .unreserved)
    }
}
