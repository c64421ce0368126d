import CodecGIF
import CodecHEIF
import CodecJPEG
import CodecJXL
import CodecPNG
import CodecWebP
import Foundation
import PipelineCore

/// The encoders imgpipe writes with, built in this one place. A codec module's encoder is one
/// `.registering(…)` line here (every codec module is imported already); an output whose
/// encoder is not registered fails with ``OutputError/noEncoder(format:path:)`` (exit 1)
/// before anything is loaded. `.pam` is imgpipe's own writer (``OutputFormat/writePAM(_:to:)``).
enum Encoders {
    // (Each keeps its C library's output off stderr: imgpipe's contract is one line per failure.)
    static let registry = EncoderRegistry()
        .registering(PNGEncoder())
        .registering(JPEGEncoder())  // CodecJPEG: .jpg, .jpeg
        .registering(WebPEncoder())  // CodecWebP: .webp
        .registering(HEIFEncoder.heic)  // CodecHEIF: .heic (x265)
        .registering(HEIFEncoder.avif)  // CodecHEIF: .avif (aom)
        .registering(GIFEncoder())  // CodecGIF: .gif (stills and animations)
        .registering(JXLEncoder())  // CodecJXL: .jxl (libjxl; stills)
}

/// The request for a picture that imgpipe writes to a file (`thumb`, `decode`, `convert`):
/// the one place where it is built. It asks the decoders for straight (non-premultiplied)
/// alpha, so a full-size picture is written with the values its file stores.
enum WriteRequest {
    /// `url` at `target` (`.original`: full size, no resampling), fitted or filled, with
    /// `processors` and `filter`, asking for straight alpha: files store straight alpha, so a
    /// full-size decode is written with the file's stored values exactly.
    static func make(_ url: URL, target: TargetSize = .original, contentMode: ContentMode = .fit,
                     processors: [ImageProcessor] = [], filter: ResamplingFilter = .default) -> ImageRequest {
        var request = ImageRequest(url: url, targetSize: target, contentMode: contentMode, processors: processors)
        request.processing.pixelFormat = .rgba8Straight
        request.processing.resamplingFilter = filter
        return request
    }

    /// `url` at `geometry`'s size, fit or crop (``make(_:target:contentMode:processors:filter:)``).
    static func make(_ url: URL, geometry: ThumbnailGeometry, processors: [ImageProcessor] = [],
                     filter: ResamplingFilter = .default) -> ImageRequest {
        var request = make(url, target: geometry.target, contentMode: geometry.contentMode, processors: processors, filter: filter)
        request.cropAnchor = geometry.anchor
        return request
    }
}

/// Why imgpipe could not write an output (exit 1): typed, and each message names the file.
enum OutputError: Error, CustomStringConvertible {
    /// The extension is known but this build registers no encoder for its format.
    case noEncoder(format: ImageFormat, path: String)
    /// The encoder refused the bitmap or the options.
    case encodingFailed(path: String, EncodingError)
    /// The file (or its folder) could not be created or written.
    case cannotWrite(path: String, reason: String)

    var description: String {
        switch self {
        case .noEncoder(let format, let path):
            let writable = OutputFormat.writableExtensions.map { "." + $0 }.joined(separator: ", ")
            return "cannot write \(path): no \(format) encoder is registered in this imgpipe (it writes \(writable))"
        case .encodingFailed(let path, let error):
            return "cannot write \(path): \(error)"
        case .cannotWrite(let path, let reason):
            return "cannot write \(path): \(reason)"
        }
    }
}

extension OutputFormat {
    /// Every extension imgpipe knows, in the order messages list them, and its format.
    static let extensions: [(name: String, format: OutputFormat)] = [
        ("jpg", .jpeg), ("jpeg", .jpeg), ("png", .png), ("webp", .webp), ("avif", .avif), ("heic", .heic), ("gif", .gif), ("jxl", .jxl), ("pam", .pam),
    ]

    /// `.jpg, .jpeg, .png, .webp, .avif, .heic, .gif, .jxl, .pam`: for messages.
    static var knownExtensionList: String { extensions.map { "." + $0.name }.joined(separator: ", ") }

    /// The known extensions whose format this build can write.
    static var writableExtensions: [String] {
        extensions.filter { $0.format.imageFormat.map { Encoders.registry.encoder(for: $0) != nil } ?? true }.map(\.name)
    }

    /// The format for extension `name` (without the dot, any case), or `nil`.
    init?(extension name: String) {
        guard let match = Self.extensions.first(where: { $0.name == name.lowercased() }) else { return nil }
        self = match.format
    }

    /// The format `path`'s extension names.
    /// - Throws: ``UsageError`` naming the extension (or its absence) and the known ones.
    init(path: String) throws {
        let name = (path as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        guard !ext.isEmpty, let format = OutputFormat(extension: ext) else {
            let what = ext.isEmpty ? "no extension" : "unknown extension '.\(ext)'"
            throw UsageError(message: "cannot tell the output format of '\(path)': \(what) (known: \(Self.knownExtensionList))")
        }
        self = format
    }

    /// The extension batch outputs get: `jpg`, `png`, `webp`, `avif`, `heic`, `gif`, `jxl`, `pam`.
    var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .webp: "webp"
        case .avif: "avif"
        case .heic: "heic"
        case .gif: "gif"
        case .jxl: "jxl"
        case .pam: "pam"
        }
    }

    /// The format the encoder registry is asked for; `nil` for PAM (imgpipe's own writer).
    var imageFormat: ImageFormat? {
        switch self {
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        case .heic: .heif
        case .gif: .gif
        case .jxl: .jxl
        case .pam: nil
        }
    }

    /// Formats with a lossy quality setting.
    var takesQuality: Bool { [.jpeg, .webp, .avif, .heic, .jxl].contains(self) }
    /// Formats that can store pixels exactly: always (PNG, PAM) or on request (WebP, AVIF, HEIC, JPEG XL).
    var canBeLossless: Bool { self != .jpeg && self != .gif }
    /// Formats with a progressive mode.
    var takesProgressive: Bool { self == .jpeg }
}

/// How a command writes: the format (from the extension or `--format`), the encoder options
/// from `--quality`, `--lossless` and `--progressive`, and the encoder. Made before anything is
/// loaded, so an unknown extension, a bad option or a missing encoder fails at once.
struct OutputSettings: Sendable {
    let format: OutputFormat
    let options: EncodeOptions
    /// The registered encoder; `nil` for PAM.
    let encoder: (any ImageEncoding)?
    /// `--keep-icc`: load without converting to sRGB and embed the picture's own ICC profile.
    private(set) var keepsICC = false

    /// The encoder options for ``OutputFormat``s that take none (sheets, frames).
    init(format: OutputFormat, path: String) throws {
        try self.init(format: format, options: EncodeOptions(), path: path)
    }

    /// Settings for `format`; `path` names the output in errors.
    /// - Throws: ``OutputError/noEncoder(format:path:)`` when no registered encoder writes `format`.
    init(format: OutputFormat, options: EncodeOptions, path: String) throws {
        self.format = format
        self.options = options
        if let imageFormat = format.imageFormat {
            guard let encoder = Encoders.registry.encoder(for: imageFormat) else {
                throw OutputError.noEncoder(format: imageFormat, path: path)
            }
            self.encoder = encoder
        } else {
            encoder = nil
        }
    }

    private init(format: OutputFormat, options: EncodeOptions, encoder: any ImageEncoding) {
        self.format = format
        self.options = options
        self.encoder = encoder
    }

    /// Settings for `format` from the invocation's `--quality`, `--lossless`, `--compression-level`
    /// and `--progressive`.
    /// - Throws: ``UsageError`` for a value out of range or an option `format` cannot honour;
    ///   ``OutputError/noEncoder(format:path:)``.
    init(format: OutputFormat, invocation: Invocation, path: String) throws {
        var options = EncodeOptions()
        let name = "." + format.fileExtension
        if let text = invocation.options["quality"] {
            guard let quality = Int(text), (0...100).contains(quality) else {
                throw UsageError(message: "--quality needs a whole number from 0 to 100, got '\(text)'")
            }
            guard format.takesQuality else {
                throw UsageError(message: "--quality applies to .jpg, .webp, .avif, .heic and .jxl, not \(name) (always lossless)")
            }
            options.quality = quality
        }
        if invocation.flag("lossless") {
            guard format.canBeLossless else {
                throw UsageError(message: "--lossless: JPEG is always lossy (use .png, or .webp with --lossless)")
            }
            options.lossless = true
        }
        if let text = invocation.options["compression-level"] {
            guard let level = Int(text), (0...9).contains(level) else {
                throw UsageError(message: "--compression-level needs a whole number from 0 to 9, got '\(text)'")
            }
            guard format == .png else { throw UsageError(message: "--compression-level applies to .png only, not \(name)") }
            options.compressionLevel = level
        }
        if invocation.flag("progressive") {
            guard format.takesProgressive else {
                throw UsageError(message: "--progressive applies to .jpg and .jpeg only, not \(name)")
            }
            options.progressive = true
        }
        let keepsICC = invocation.flag("keep-icc")
        if keepsICC, format.imageFormat == nil || format == .gif {
            throw UsageError(message: "--keep-icc: \(name) stores no colour profile; write .jpg, .png, .webp, .avif, .heic or .jxl")
        }
        if let text = invocation.options["background"] {
            let background = try Self.colour(text)
            guard format == .jpeg || invocation.flag("pad") || invocation.flag("flatten") else {
                throw UsageError(message: "--background applies to .jpg and .jpeg (no alpha to flatten) or with thumb's --pad "
                                 + "and --flatten; \(name) keeps the alpha")
            }
            if format == .jpeg {
                self.init(format: format, options: options, encoder: JPEGEncoder(background: background))
                self.keepsICC = keepsICC
                return
            }
        }
        try self.init(format: format, options: options, path: path)
        self.keepsICC = keepsICC
    }

    /// `request` as these settings load it: with `--keep-icc`, the pixels left in the file's
    /// colour space (not converted to sRGB), so its profile can be embedded again.
    func loading(_ request: ImageRequest) -> ImageRequest {
        var request = request
        if keepsICC { request.processing.convertsToSRGB = false }
        return request
    }

    /// `--background`'s colour, as ``RGBAColor/init(parsing:)`` reads it.
    static func colour(_ text: String) throws -> RGBAColor {
        guard let colour = RGBAColor(parsing: text) else {
            throw UsageError(message: "--background needs a colour name (white, black, red, …), transparent, #RRGGBB, #RRGGBBAA, #RGB or R,G,B[,A] (0-255), got '\(text)'")
        }
        return colour
    }

    /// The options `thumb`, `decode` and `convert` take.
    static let commandOptions: [OptionSpec] = [
        .value("quality", "Q", "lossy quality 0-100 for .jpg, .webp, .avif, .heic, .jxl (default: the encoder's)"),
        .flag("lossless", "store the pixels exactly (.webp, .jxl; .avif/.heic where libheif can)"),
        .flag("progressive", "write a progressive JPEG"),
        .value("compression-level", "N", "PNG zlib level 0-9 (default: the encoder's, 6)"),
        .flag("first-frame", "with an animated source and a .webp or .gif output: write only the first frame "
              + "(default: every frame, as vipsthumbnail)"),
        .flag("keep-icc", "keep the picture's colour profile: its pixels are not converted to sRGB and its ICC profile "
              + "is embedded (default: converted to sRGB, no profile written; EXIF, XMP and comments are never written)"),
        .value("background", "COLOUR", "the colour of --pad and --flatten, and what .jpg flattens transparency onto: a name (white, red, …), "
               + "transparent, #RRGGBB[AA] or R,G,B[,A] (defaults: transparent, white, black)"),
    ]

    /// Encodes `bitmap` and writes it to `path` atomically (a temporary file beside it, then
    /// `rename`): a failed write leaves no partial file, and an older file stays until the new
    /// one is complete.
    /// With ``keepsICC``, `iccProfile` (the response's) is embedded.
    /// - Throws: ``OutputError``.
    func write(_ bitmap: Bitmap, iccProfile: Data? = nil, to path: String) throws {
        // `-`: standard output, as it comes (there is no file to replace atomically).
        func writing(_ body: (FileHandle) throws -> Void) throws {
            guard path == Self.standardOutput else { return try OutputFormat.writeAtomically(to: path, body) }
            do { try body(FileHandle.standardOutput) } catch {
                throw OutputError.cannotWrite(path: "standard output", reason: Console.oneLine(error.localizedDescription))
            }
        }
        guard let encoder else {
            try writing { file in try OutputFormat.writePAM(bitmap, to: file) }
            return
        }
        let data: Data
        do {
            var options = options
            if keepsICC { options.iccProfile = iccProfile }
            data = try encoder.encode(bitmap, options: options)
        } catch let error as EncodingError {
            throw OutputError.encodingFailed(path: path, error)
        }
        try write(encoded: data, to: path)
    }

    /// Writes `data`, a whole file already encoded, to `path` (atomically, or to stdout for `-`).
    /// - Throws: ``OutputError``.
    func write(encoded data: Data, to path: String) throws {
        guard path == Self.standardOutput else {
            return try OutputFormat.writeAtomically(to: path) { file in try file.write(contentsOf: data) }
        }
        do { try FileHandle.standardOutput.write(contentsOf: data) } catch {
            throw OutputError.cannotWrite(path: "standard output", reason: Console.oneLine(error.localizedDescription))
        }
    }

    /// The `--out` value that means standard output.
    static let standardOutput = "-"
}

extension Invocation {
    /// The `--out` path and how to write it: the format from its extension (exit 2 for an
    /// unknown one), the encoder options, the encoder (exit 1 when none is registered), and a
    /// folder that exists (exit 1 otherwise), all before anything is loaded.
    ///
    /// `--out -` writes to standard output in the format `--format` names (nothing else is
    /// written there; notes go to stderr).
    func outputSettings() throws -> (path: String, settings: OutputSettings) {
        guard let path = options["out"], !path.isEmpty else { throw UsageError(message: "'imgpipe \(command.name)' needs --out FILE") }
        if path == OutputSettings.standardOutput {
            guard let name = options["format"], let format = OutputFormat(extension: name) else {
                throw UsageError(message: "--out - writes to stdout: give --format \(OutputFormat.knownExtensionList.replacingOccurrences(of: ".", with: ""))")
            }
            return (path, try OutputSettings(format: format, invocation: self, path: path))
        }
        let settings = try OutputSettings(format: try OutputFormat(path: path), invocation: self, path: path)
        try OutputFormat.checkFolder(of: path)
        return (path, settings)
    }
}
