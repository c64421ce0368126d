import ImagePipelineKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The encoders imgpipe writes with: the kit's, ``PipelineCore/EncoderRegistry/standard``, and
/// nothing else. An encoder added there is an output format here, its extension in every list
/// and message (``OutputFormat/extensions``), with no edit to imgpipe. `.pam` is imgpipe's own
/// writer (``OutputFormat/writePAM(_:to:)``).
enum Encoders {
    static let registry = EncoderRegistry.standard
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
    /// Every extension imgpipe writes, in the order messages list them, and its format:
    /// ``extensions(writtenBy:)`` of ``Encoders/registry``.
    static let extensions = extensions(writtenBy: Encoders.registry)

    /// The extensions of the formats `registry`'s encoders write, in the order they were
    /// registered (each format's ``PipelineCore/ImageFormat/fileExtension``, then the other
    /// spellings users type, ``otherSpellings``), then `pam`.
    static func extensions(writtenBy registry: EncoderRegistry) -> [(name: String, format: OutputFormat)] {
        var seen = Set<ImageFormat>(), list: [(name: String, format: OutputFormat)] = []
        for encoder in registry.all.reversed() where seen.insert(encoder.format).inserted {
            let format = OutputFormat.encoded(encoder.format)
            let names = [encoder.format.fileExtension ?? encoder.format.rawValue] + (otherSpellings[encoder.format] ?? [])
            list += names.map { ($0.lowercased(), format) }
        }
        return list + [("pam", .pam)]
    }

    /// Extensions users type for a format beside its own ``PipelineCore/ImageFormat/fileExtension``.
    static let otherSpellings: [ImageFormat: [String]] = [.jpeg: ["jpeg"]]

    /// `.jpg, .jpeg, .png, .webp, .avif, .heic, .gif, .jxl, .pam`: for messages.
    static var knownExtensionList: String { extensions.map { "." + $0.name }.joined(separator: ", ") }

    /// `jpg, png, webp, avif, heic, gif, jxl or pam`: one extension a format, for help.
    static var formatNames: String {
        var names: [String] = []
        for (name, format) in extensions where !names.contains(format.fileExtension) { names.append(name) }
        return names.dropLast().joined(separator: ", ") + " or " + (names.last ?? "")
    }

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
        let name = PathText.lastComponent(path)
        let ext = PathText.pathExtension(name)
        guard !ext.isEmpty, let format = OutputFormat(extension: ext) else {
            let what = ext.isEmpty ? "no extension" : "unknown extension '.\(ext)'"
            throw UsageError(message: "cannot tell the output format of '\(path)': \(what) (known: \(Self.knownExtensionList))")
        }
        self = format
    }

    /// The extension batch outputs get: the format's own (`jpg`, `png`, …), `pam`.
    var fileExtension: String { imageFormat.map { $0.fileExtension ?? $0.rawValue } ?? "pam" }

    /// Formats with a lossy quality setting.
    var takesQuality: Bool { imageFormat.map { [.jpeg, .webp, .avif, .heif, .jxl].contains($0) } ?? false }
    /// Formats that can store pixels exactly: always (PNG, PAM) or on request (WebP, AVIF, HEIC, JPEG XL).
    var canBeLossless: Bool { imageFormat != .jpeg && imageFormat != .gif }
    /// Formats with a progressive mode.
    var takesProgressive: Bool { imageFormat == .jpeg }
    /// Formats that store a colour profile (every encoder's but GIF's; not PAM).
    var storesColourProfile: Bool { imageFormat != nil && imageFormat != .gif }
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

    /// Settings for `format` from the invocation's ``EncodingOptions``: `--quality`, `--lossless`,
    /// `--compression-level`, `--progressive`, `--keep-icc` and `--background` (with `padsOrFlattens`,
    /// thumb's `--pad` or `--flatten` uses the background).
    /// - Throws: ``UsageError`` for an option `format` cannot honour; ``OutputError/noEncoder(format:path:)``.
    init(format: OutputFormat, invocation: Invocation, path: String, padsOrFlattens: Bool = false) throws {
        let given = EncodingOptions.declared
        var options = EncodeOptions()
        let name = "." + format.fileExtension
        if let quality = invocation[given.quality] {
            guard format.takesQuality else {
                throw UsageError(message: "--quality applies to .jpg, .webp, .avif, .heic and .jxl, not \(name) (always lossless)")
            }
            options.quality = quality
        }
        if invocation[given.lossless] {
            guard format.canBeLossless else {
                throw UsageError(message: "--lossless: JPEG is always lossy (use .png, or .webp with --lossless)")
            }
            options.lossless = true
        }
        if let level = invocation[given.compressionLevel] {
            guard format == .encoded(.png) else { throw UsageError(message: "--compression-level applies to .png only, not \(name)") }
            options.compressionLevel = level
        }
        if invocation[given.progressive] {
            guard format.takesProgressive else {
                throw UsageError(message: "--progressive applies to .jpg and .jpeg only, not \(name)")
            }
            options.progressive = true
        }
        let keepsICC = invocation[given.keepICC]
        if keepsICC, !format.storesColourProfile {
            throw UsageError(message: "--keep-icc: \(name) stores no colour profile; write .jpg, .png, .webp, .avif, .heic or .jxl")
        }
        if let background = invocation[given.background] {
            guard format == .encoded(.jpeg) || padsOrFlattens else {
                throw UsageError(message: "--background applies to .jpg and .jpeg (no alpha to flatten) or with thumb's --pad "
                                 + "and --flatten; \(name) keeps the alpha")
            }
            if format == .encoded(.jpeg) {
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

    /// Encodes `bitmap` and writes it to `path` atomically (a temporary file beside it, then
    /// `rename`): a failed write leaves no partial file, and an older file stays until the new
    /// one is complete.
    /// With ``keepsICC``, `iccProfile` (the response's) is embedded.
    /// - Throws: ``OutputError``.
    func write(_ bitmap: Bitmap, iccProfile: Data? = nil, to path: String) throws {
        // `-`: standard output, as it comes (there is no file to replace atomically).
        func writing(_ body: (FileOutput) throws -> Void) throws {
            guard path == Self.standardOutput else { return try OutputFormat.writeAtomically(to: path, body) }
            do { try body(FileOutput.standardOutput) } catch {
                throw OutputError.cannotWrite(path: "standard output", reason: Console.oneLine(localizedDescription(of: error)))
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
        do { try FileOutput.standardOutput.write(contentsOf: data) } catch {
            throw OutputError.cannotWrite(path: "standard output", reason: Console.oneLine(localizedDescription(of: error)))
        }
    }

    /// The `--out` value that means standard output.
    static let standardOutput = "-"
}

extension Invocation {
    /// The `--out` path (`option`) and how to write it: the format from its extension (exit 2
    /// for an unknown one), the encoder options, the encoder (exit 1 when none is registered),
    /// and a folder that exists (exit 1 otherwise), all before anything is loaded.
    ///
    /// `--out -` writes to standard output in the format `format` names (nothing else is
    /// written there; notes go to stderr).
    func outputSettings(_ option: Option<String>, format: Option<OutputFormat>? = nil,
                        padsOrFlattens: Bool = false) throws -> (path: String, settings: OutputSettings) {
        let path = try output(option)
        if path == OutputSettings.standardOutput {
            guard let format, let named = self[format] else {
                throw UsageError(message: "--out - writes to stdout: give --format \(OutputFormat.knownExtensionList.replacingOccurrences(ofASCII: ".", with: ""))")
            }
            return (path, try OutputSettings(format: named, invocation: self, path: path, padsOrFlattens: padsOrFlattens))
        }
        let settings = try OutputSettings(format: try OutputFormat(path: path), invocation: self, path: path, padsOrFlattens: padsOrFlattens)
        try OutputFormat.checkFolder(of: path)
        return (path, settings)
    }
}
