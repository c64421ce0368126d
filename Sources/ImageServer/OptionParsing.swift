import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// imgproxy's processing options (`name:arg:arg`, long and short names) applied in order to a
/// ``RenderOptions``, with imgproxy's semantics: a later option overrides an earlier one, an
/// empty argument leaves its field as it was, and `preset|pr` applies its presets in place.
///
/// Every option this server does not build is refused, never ignored: a client that asked for
/// `pixelate` and got a sharp picture would cache the wrong thing forever.
struct OptionParser {
    /// The most pixels of a side, after `dpr`: width, height, padding and offsets.
    static let maxSide = 16_384
    /// The largest `dpr`.
    static let maxDPR = 8.0
    /// The largest blur sigma (libvips's kernel grows with it).
    static let maxBlur = 100.0
    /// The largest sharpen sigma. Unlike the blur's (a box approximation above 12), the
    /// sharpen's mask is exact, as libvips's, and its cost grows with sigma: at 100 it added 21 s
    /// to a 64-megapixel result (a worker the 504 does not stop), at 10 nothing measurable; and
    /// imgproxy's own guidance is 0.5 to 1.5 (a sigma of a few pixels already sharpens only
    /// coarse detail).
    static let maxSharpen = 10.0
    /// The largest `contrast` and `saturation` factor: at 10 every channel 13 levels from its
    /// blend's grey already reaches black or white.
    static let maxColorFactor = 10.0
    /// How deep presets may name presets.
    static let maxPresetDepth = 8
    /// How many option segments presets may expand to in one URL: presets that name others
    /// several times each would otherwise grow exponentially with the depth.
    static let maxPresetSegments = 1_000

    let presets: Presets
    /// The option segments presets have expanded to so far.
    private var expanded = 0

    init(presets: Presets) { self.presets = presets }

    /// Applies one option segment's name and arguments. `chain` is the presets being expanded.
    mutating func apply(_ name: String, _ args: [String], to options: inout RenderOptions, chain: [String] = []) throws(ServerError) {
        // A segment always has an argument (it has a `:`); a preset set by hand in `byName` may not.
        let args = args.isEmpty ? [""] : args
        let option = Option(name: name, args: args)
        switch name {
        case "resize", "rs": try resize(option, &options)
        case "size", "s": try size(option, 0, &options)
        case "resizing_type", "rt": options.resizingType = try resizingType(option, 0)
        case "width", "w": options.width = try option.onlySize()
        case "height", "h": options.height = try option.onlySize()
        case "dpr":
            let dpr = try option.onlyDouble()
            guard dpr > 0, dpr <= Self.maxDPR else { throw option.invalid(0, "a number in (0, 8]") }
            options.dpr = dpr
        case "enlarge", "el": options.enlarge = try option.onlyBool()
        case "extend", "ex": try extend(option, 0, &options)
        case "gravity", "g": options.gravity = try gravity(option, from: 0, allowed: .crop)
        case "crop", "c": try crop(option, &options)
        case "trim", "t": try trim(option, &options)
        case "padding", "pd": try padding(option, &options)
        case "auto_rotate", "ar": options.autoRotate = try option.onlyBool()
        case "rotate", "rot":
            try option.expect(max: 1)
            guard option.has(0) else { break }
            // Any whole number of degrees parses (Int bounds it); imgproxy refuses the rest.
            guard let angle = Int(args[0]) else { throw option.invalid(0, "an angle in degrees, a multiple of 90") }
            guard angle.isMultiple(of: 90) else {
                throw ServerError(.badRequest, "invalid argument \(Option.quoted(args[0])) to \(name): the rotation angle must be a multiple of 90")
            }
            options.rotate = (angle % 360 + 360) % 360
        case "flip", "fl":
            try option.expect(max: 2)
            if option.has(0) { options.flipHorizontal = try option.bool(0) }
            if option.has(1) { options.flipVertical = try option.bool(1) }
        case "background", "bg": try background(option, &options)
        case "blur", "bl":
            let sigma = try option.onlyDouble()
            guard sigma > 0, sigma <= Self.maxBlur else { throw option.invalid(0, "a sigma in (0, 100]") }
            options.blur = sigma
        case "sharpen", "sh":
            let sigma = try option.onlyDouble()
            guard sigma > 0, sigma <= Self.maxSharpen else { throw option.invalid(0, "a sigma in (0, 10]") }
            options.sharpen = sigma
        case "adjust", "a": try adjust(option, &options)
        case "brightness", "br":
            try option.expect(max: 1)
            options.brightness = try option.brightness(0)
        case "contrast", "co":
            try option.expect(max: 1)
            options.contrast = try option.colorFactor(0)
        case "saturation", "sa":
            try option.expect(max: 1)
            options.saturation = try option.colorFactor(0)
        case "watermark", "wm": try watermark(option, &options)
        case "strip_metadata", "sm": options.stripMetadata = try option.onlyBool()
        case "strip_color_profile", "scp": options.stripColorProfile = try option.onlyBool()
        case "quality", "q":
            try option.expect(max: 1)
            options.quality = try option.quality(0)
        case "format_quality", "fq": try formatQuality(option, &options)
        case "format", "f", "ext":
            try option.expect(max: 1)
            options.format = try option.format(0)
        case "cachebuster", "cb":
            try option.expect(max: 1)
            options.cacheBuster = args[0].isEmpty ? nil : args[0]
        case "expires", "exp":
            try option.expect(max: 1)
            guard let seconds = Int64(args[0]), seconds >= 0 else { throw option.invalid(0, "unix seconds") }
            options.expires = seconds == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(seconds))
        case "filename", "fn": try filename(option, &options)
        case "return_attachment", "att": options.returnAttachment = try option.onlyBool()
        case "preset", "pr": try preset(option, &options, chain: chain)
        case "max_src_resolution", "msr":
            let megapixels = try option.onlyDouble()
            guard megapixels > 0, megapixels <= 1_000_000 else { throw option.invalid(0, "megapixels above 0") }
            options.maxSourceResolution = megapixels
        case "max_animation_frames", "maf":
            try option.expect(max: 1)
            guard let frames = Int(args[0]), frames > 0 else { throw option.invalid(0, "a number of frames above 0") }
            options.maxAnimationFrames = frames
        default:
            if Self.unbuilt.contains(name) {
                throw ServerError(.badRequest, "option \(name) is not supported by this server")
            }
            throw ServerError(.badRequest, "unknown option \(Option.quoted(name))")
        }
    }

    /// Checks what only the whole list can tell: sizes after `dpr`.
    static func validate(_ options: RenderOptions) throws(ServerError) {
        func check(_ value: Double, _ what: String) throws(ServerError) {
            guard abs(value * options.dpr) <= Double(maxSide) else {
                throw ServerError(.badRequest, "\(what) \(value) × dpr \(options.dpr) is above \(maxSide) pixels")
            }
        }
        try check(Double(options.width), "width")
        try check(Double(options.height), "height")
        if let padding = options.padding {
            for side in [padding.top, padding.right, padding.bottom, padding.left] { try check(Double(side), "padding") }
        }
        for gravity in [options.gravity, options.extend, options.crop?.gravity, options.watermark?.position].compactMap({ $0 }) {
            try check(gravity.offsetX, "gravity offset")
            try check(gravity.offsetY, "gravity offset")
        }
    }

    // MARK: - Options

    private func resize(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 8)
        if !option.args[0].isEmpty { options.resizingType = try resizingType(option, 0) }
        try size(option, 1, &options)
    }

    /// `size`'s arguments from `first` on: width, height, enlarge, then extend's.
    private func size(_ option: Option, _ first: Int, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: first + 7)
        if option.has(first) { options.width = try option.size(first) }
        if option.has(first + 1) { options.height = try option.size(first + 1) }
        if option.has(first + 2) { options.enlarge = try option.bool(first + 2) }
        if option.has(first + 3) { try extend(option, first + 3, &options) }
    }

    private func resizingType(_ option: Option, _ index: Int) throws(ServerError) -> RenderOptions.ResizingType {
        guard let type = RenderOptions.ResizingType(rawValue: option.args[index]) else {
            throw option.invalid(index, "fit, fill, fill-down, force or auto")
        }
        return type
    }

    /// `extend`'s arguments from `first` on: on/off, then a gravity (no `sm`).
    private func extend(_ option: Option, _ first: Int, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: first + 4)
        let on = try option.bool(first)
        let gravity = option.args.count > first + 1 ? try gravity(option, from: first + 1, allowed: .extend) : RenderOptions.Gravity()
        options.extend = on ? gravity : nil
    }

    private func crop(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 5)
        let width = try option.cropSide(0)
        let height = option.args.count > 1 ? try option.cropSide(1) : 0
        let gravity = option.args.count > 2 ? try gravity(option, from: 2, allowed: .crop) : nil
        options.crop = width == 0 && height == 0 ? nil : RenderOptions.Crop(width: width, height: height, gravity: gravity)
    }

    private func trim(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 4)
        guard option.has(0) else {
            options.trim = nil
            return
        }
        let threshold = try option.double(0)
        guard threshold >= 0, threshold <= 255 else { throw option.invalid(0, "a threshold in 0…255") }
        var trim = RenderOptions.TrimOptions(threshold: threshold)
        if option.has(1) { trim.color = try option.hexColor(1) }
        if option.has(2) { trim.equalHorizontal = try option.bool(2) }
        if option.has(3) { trim.equalVertical = try option.bool(3) }
        options.trim = trim
    }

    /// CSS's order and shorthand: top, right (top's), bottom (top's), left (right's).
    private func padding(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 4)
        let old = options.padding ?? RenderOptions.Padding(top: 0, right: 0, bottom: 0, left: 0)
        let top = option.has(0) ? try option.size(0) : old.top
        let right = option.has(1) ? try option.size(1) : top
        let bottom = option.has(2) ? try option.size(2) : top
        let left = option.has(3) ? try option.size(3) : right
        let padding = RenderOptions.Padding(top: top, right: right, bottom: bottom, left: left)
        options.padding = [top, right, bottom, left].allSatisfy { $0 == 0 } ? nil : padding
    }

    /// `bg:` (none), `bg:RRGGBB` or `bg:R:G:B`.
    private func background(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        switch option.args.count {
        case 1: options.background = option.has(0) ? try option.hexColor(0) : nil
        case 3:
            var channels: [UInt8] = []
            for index in 0..<3 {
                guard let channel = UInt8(option.args[index]) else { throw option.invalid(index, "a number in 0…255") }
                channels.append(channel)
            }
            options.background = RGBAColor(red: channels[0], green: channels[1], blue: channels[2])
        default: throw option.wrongCount("1 (hex) or 3 (R:G:B)")
        }
    }

    /// imgproxy Pro's `adjust:%brightness:%contrast:%saturation`; an empty argument leaves its field.
    private func adjust(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 3)
        if option.has(0) { options.brightness = try option.brightness(0) }
        if option.has(1) { options.contrast = try option.colorFactor(1) }
        if option.has(2) { options.saturation = try option.colorFactor(2) }
    }

    private func watermark(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 5)
        let opacity = try option.double(0)
        guard opacity >= 0, opacity <= 1 else { throw option.invalid(0, "an opacity in 0…1") }
        var position = RenderOptions.Gravity()
        if option.has(1) { position = try gravity(option, from: 1, allowed: .watermark, offsetsFollow: false) }
        if option.has(2) { position.offsetX = try option.double(2) }
        if option.has(3) { position.offsetY = try option.double(3) }
        var scale = 0.0
        if option.has(4) {
            scale = try option.double(4)
            guard scale >= 0, scale <= 1 else { throw option.invalid(4, "a scale in 0…1") }
        }
        options.watermark = opacity == 0 ? nil : RenderOptions.Watermark(opacity: opacity, position: position, scale: scale)
    }

    /// `fq:format:quality:format:quality…`; a quality of 0 removes the format's.
    private func formatQuality(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        guard option.args.count.isMultiple(of: 2) else { throw option.wrongCount("pairs of format and quality") }
        for index in stride(from: 0, to: option.args.count, by: 2) {
            let format = try option.format(index)
            options.formatQuality[format] = try option.quality(index + 1)
        }
    }

    /// `fn:name` or `fn:base64url:1`.
    private func filename(_ option: Option, _ options: inout RenderOptions) throws(ServerError) {
        try option.expect(max: 2)
        let encoded = option.has(1) && (try? option.bool(1)) == true
        let decoded = encoded ? Base64URL.decoded(option.args[0]).flatMap { String(validating: $0, as: UTF8.self) } : option.args[0].removingPercentEscapes
        guard let name = decoded else { throw option.invalid(0, encoded ? "URL-safe base64 of UTF-8" : "a percent-encoded name") }
        guard !name.unicodeScalars.contains(where: MessageText.needsEscaping), !name.contains("\"") else {
            throw option.invalid(0, "a file name without control characters or quotes")
        }
        options.filename = name.isEmpty ? nil : name
    }

    private mutating func preset(_ option: Option, _ options: inout RenderOptions, chain: [String]) throws(ServerError) {
        for name in option.args {
            guard let segments = presets.byName[name] else {
                throw ServerError(.badRequest, "unknown preset \(Option.quoted(name))")
            }
            guard !chain.contains(name) else {
                throw ServerError(.badRequest, "preset \(Option.quoted(name)) names itself (\((chain + [name]).joined(separator: " → ")))")
            }
            guard chain.count < Self.maxPresetDepth else {
                throw ServerError(.badRequest, "presets nest deeper than \(Self.maxPresetDepth) at \(Option.quoted(name))")
            }
            for segment in segments {
                expanded += 1
                guard expanded <= Self.maxPresetSegments else {
                    throw ServerError(.badRequest, "presets expand to more than \(Self.maxPresetSegments) options at \(Option.quoted(name))")
                }
                let parts = segment.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
                try apply(parts[0], Array(parts.dropFirst()), to: &options, chain: chain + [name])
            }
        }
    }

    // MARK: - Gravity

    private enum GravityUse {
        case crop, extend, watermark
    }

    /// imgproxy's gravity names and the anchors they are.
    private static let compass: [String: CropAnchor] = [
        "no": .top, "so": .bottom, "ea": .right, "we": .left, "noea": .topRight, "nowe": .topLeft,
        "soea": .bottomRight, "sowe": .bottomLeft, "ce": .center,
    ]

    /// A gravity from `option.args[first…]`: `type[:x:y]`, `sm` (crops only, no offsets) or
    /// `fp:x:y` (0…1 each; crops and extensions).
    private func gravity(_ option: Option, from first: Int, allowed use: GravityUse, offsetsFollow: Bool = true) throws(ServerError)
        -> RenderOptions.Gravity
    {
        let type = option.args[first]
        let extra = offsetsFollow ? option.args.count - first - 1 : 0
        if let anchor = Self.compass[type] {
            guard extra <= 2 else { throw option.wrongCount("a gravity and at most two offsets") }
            var gravity = RenderOptions.Gravity(anchor)
            if extra >= 1 { gravity.offsetX = try option.double(first + 1) }
            if extra >= 2 { gravity.offsetY = try option.double(first + 2) }
            return gravity
        }
        switch (type, use) {
        case ("sm", .crop):
            guard extra == 0 else { throw option.wrongCount("no offsets after sm") }
            return RenderOptions.Gravity(.attention)
        case ("fp", .crop), ("fp", .extend):
            guard extra == 2 else { throw option.wrongCount("fp:x:y") }
            let x = try option.double(first + 1), y = try option.double(first + 2)
            guard (0...1).contains(x) else { throw option.invalid(first + 1, "a focal point in 0…1") }
            guard (0...1).contains(y) else { throw option.invalid(first + 2, "a focal point in 0…1") }
            return RenderOptions.Gravity(.focalPoint(x: x, y: y))
        case ("re", .watermark):
            throw ServerError(.badRequest, "watermark position re (replicate) is not supported by this server")
        default:
            let names = "no, so, ea, we, noea, nowe, soea, sowe, ce"
            switch use {
            case .crop: throw option.invalid(first, names + ", sm or fp")
            case .extend: throw option.invalid(first, names + " or fp")
            case .watermark: throw option.invalid(first, names)
            }
        }
    }

    /// imgproxy's options (long and short names) this server does not build: refused by name.
    static let unbuilt: Set<String> = [
        "min-width", "mw", "min-height", "mh", "zoom", "z", "extend_aspect_ratio", "extend_ar", "exar",
        "pixelate", "pix", "unsharp_masking", "ush", "monochrome", "mc", "duotone", "dt", "background_alpha", "bga",
        "blur_detections", "bd", "draw_detections", "dd", "colorize", "col", "gradient", "gr", "watermark_url", "wmu",
        "watermark_text", "wmt", "watermark_size", "wms", "watermark_shadow", "wmsh", "style", "st", "keep_copyright", "kcr",
        "enforce_thumbnail", "eth", "max_bytes", "mb", "jpeg_options", "jpgo", "png_options", "pngo", "webp_options", "webpo",
        "avif_options", "avifo", "autoquality", "aq", "page", "pg", "pages", "pgs", "disable_animation", "da",
        "video_thumbnail_second", "vts", "video_thumbnail_keyframes", "vtk", "video_thumbnail_tile", "vtt",
        "video_thumbnail_animation", "vta", "fallback_image_url", "fiu", "skip_processing", "skp", "raw",
        "max_src_file_size", "msfs", "max_animation_frame_resolution", "mafr", "max_result_dimension", "mrd",
        "hashsum", "hs", "resizing_algorithm", "ra", "dpi", "crop_aspect_ratio", "crop_ar", "car", "objects_position",
        "obj_pos", "op", "trim_padding", "zoom_width", "zoom_height",
    ]
}

/// One option segment being read: its name and arguments, and the errors that name them.
private struct Option {
    let name: String
    let args: [String]

    /// Whether argument `index` is given and not empty.
    func has(_ index: Int) -> Bool { index < args.count && !args[index].isEmpty }

    func expect(max: Int) throws(ServerError) {
        guard args.count <= max else { throw wrongCount("at most \(max)") }
    }

    func invalid(_ index: Int, _ expected: String) -> ServerError {
        let value = index < args.count ? args[index] : ""
        return ServerError(.badRequest, "invalid argument \(Self.quoted(value)) to \(name): expected \(expected)")
    }

    func wrongCount(_ expected: String) -> ServerError {
        ServerError(.badRequest, "\(args.count) arguments to \(name): expected \(expected)")
    }

    /// The one argument of a boolean option.
    func onlyBool() throws(ServerError) -> Bool {
        try expect(max: 1)
        return try bool(0)
    }

    /// The one argument of a size option.
    func onlySize() throws(ServerError) -> Int {
        try expect(max: 1)
        return try size(0)
    }

    /// The one argument of a number option.
    func onlyDouble() throws(ServerError) -> Double {
        try expect(max: 1)
        return try double(0)
    }

    /// A number, finite (Swift's `Double("nan")` is one).
    func double(_ index: Int) throws(ServerError) -> Double {
        guard index < args.count, let value = Double(args[index]), value.isFinite else { throw invalid(index, "a number") }
        return value
    }

    /// A side in pixels before `dpr`: 0…``OptionParser/maxSide``.
    func size(_ index: Int) throws(ServerError) -> Int {
        guard index < args.count, let value = Int(args[index]), value >= 0, value <= OptionParser.maxSide else {
            throw invalid(index, "pixels in 0…\(OptionParser.maxSide)")
        }
        return value
    }

    /// A crop side: 0 (whole), a fraction below 1, or pixels of the source.
    func cropSide(_ index: Int) throws(ServerError) -> Double {
        let value = try double(index)
        guard value >= 0, value <= 65_535 else { throw invalid(index, "pixels in 0…65535 or a fraction") }
        return value
    }

    /// imgproxy Pro's brightness: an integer −255…255 (levels added to R, G and B).
    func brightness(_ index: Int) throws(ServerError) -> Int {
        guard index < args.count, let value = Int(args[index]), (-255...255).contains(value) else {
            throw invalid(index, "an integer in -255…255")
        }
        return value
    }

    /// A contrast or saturation factor: 0…``OptionParser/maxColorFactor`` (1 leaves the picture).
    func colorFactor(_ index: Int) throws(ServerError) -> Double {
        let value = try double(index)
        guard value >= 0, value <= OptionParser.maxColorFactor else { throw invalid(index, "a factor in 0…10") }
        return value
    }

    /// Go's `strconv.ParseBool`, which imgproxy reads booleans with; anything else is refused
    /// (imgproxy takes it as false with a warning, which hides a typo).
    func bool(_ index: Int) throws(ServerError) -> Bool {
        switch index < args.count ? args[index] : "" {
        case "1", "t", "T", "true", "TRUE", "True": return true
        case "0", "f", "F", "false", "FALSE", "False": return false
        default: throw invalid(index, "a boolean (1, t, true, 0, f, false)")
        }
    }

    /// 1–100, or 0 for the format's default (`nil`).
    func quality(_ index: Int) throws(ServerError) -> Int? {
        guard index < args.count, let value = Int(args[index]), (0...100).contains(value) else { throw invalid(index, "a quality in 0…100") }
        return value == 0 ? nil : value
    }

    /// `RRGGBB` or `RGB`, as imgproxy's hex colours.
    func hexColor(_ index: Int) throws(ServerError) -> RGBAColor {
        let text = args[index]
        guard text.count == 3 || text.count == 6, text.allSatisfy(\.isHexDigit), text.allSatisfy(\.isASCII),
              let color = RGBAColor(parsing: text)
        else { throw invalid(index, "a hex colour (RRGGBB)") }
        return color
    }

    func format(_ index: Int) throws(ServerError) -> ImageFormat {
        guard let format = ImgproxyURL.format(named: args[index]) else {
            throw invalid(index, "jpg, jpeg, png, webp, avif, gif, jxl or heic")
        }
        return format
    }

    /// `text` for a message: escaped, bounded, in quotes.
    static func quoted(_ text: String) -> String { "\"" + MessageText.escaped(text, limit: 60) + "\"" }
}
