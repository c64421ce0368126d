import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// imgpipe's options, typed: each is declared once as a value (``Option`` or ``Flag``: its name,
// one-letter form, value name, help heading, help text and how its text becomes a typed value),
// commands and shared groups hold those values as stored properties (``OptionGroup``), and the
// table of a command is read off them. Parsing, validation, `--help` and "did you mean" all
// work from that table (as vipsthumbnail's one `GOptionEntry` table, and swift-argument-parser's
// `@Option`/`@OptionGroup` properties, which it finds by reflection too).

/// A command-line mistake: printed with a pointer to `--help`, exit status 2.
struct UsageError: Error {
    let message: String
}

/// The headings `imgpipe COMMAND --help` groups options under, in this order.
enum HelpHeading: String, CaseIterable, Sendable {
    case size = "size and crop"
    case processing
    case output
    case sources = "sources, network and caches"
    case server
    case general
}

/// One row of a command's option table, untyped: what the parser and the help read.
struct OptionSpec: Sendable {
    let name: String
    /// The one-letter form (`-s 128`, `-s128`), as vipsthumbnail and ImageMagick users type it.
    let short: Character?
    /// `nil` for a flag.
    let valueName: String?
    let heading: HelpHeading
    let help: String
    /// Given more than once, every value is kept (``Invocation/all(_:)``); otherwise the last wins.
    let repeatable: Bool
    /// The typed value of a given text, or a ``UsageError`` naming the option: run by the parser.
    let convert: @Sendable (String) throws -> any Sendable

    /// `--size N` or `--round`, as help shows it.
    var usage: String { "--\(name)" + (valueName.map { " \($0)" } ?? "") }
}

/// A declared option, an ``Option`` or a ``Flag``: its row of the table.
protocol OptionDeclaration: Sendable {
    var spec: OptionSpec { get }
}

/// How an option's text becomes its value; `option` is `--name`, for the message.
struct ValueParser<Value: Sendable>: Sendable {
    let parse: @Sendable (_ text: String, _ option: String) throws -> Value
}

/// An option that takes a value (`--size 128`, `--size=128`), read as a `Value`.
struct Option<Value: Sendable>: OptionDeclaration {
    let spec: OptionSpec

    init(_ name: String, short: Character? = nil, _ valueName: String, _ heading: HelpHeading, _ help: String,
         repeatable: Bool = false, _ parser: ValueParser<Value>) {
        spec = OptionSpec(name: name, short: short, valueName: valueName, heading: heading, help: help, repeatable: repeatable,
                          convert: { text in try parser.parse(text, "--\(name)") })
    }
}

/// An option that is on or off (`--round`).
struct Flag: OptionDeclaration {
    let spec: OptionSpec

    init(_ name: String, short: Character? = nil, _ heading: HelpHeading, _ help: String) {
        spec = OptionSpec(name: name, short: short, valueName: nil, heading: heading, help: help, repeatable: false,
                          convert: { _ in true })
    }
}

/// Options declared as stored properties (``Option``, ``Flag``, and groups of them), in the
/// order help lists them: a command's table, or a group several commands share.
protocol OptionGroup: Sendable {}

extension OptionGroup {
    /// Every option this group declares, nested groups included, in declaration order.
    var table: [OptionSpec] {
        Mirror(reflecting: self).children.flatMap { child -> [OptionSpec] in
            if let option = child.value as? any OptionDeclaration { return [option.spec] }
            if let group = child.value as? any OptionGroup { return group.table }
            return []
        }
    }
}

// MARK: - Value types

extension ValueParser where Value == String {
    /// The text as given.
    static var text: ValueParser { ValueParser { text, _ in text } }
}

extension ValueParser where Value == Int {
    /// A whole number above zero.
    static var positiveInteger: ValueParser {
        ValueParser { text, option in
            guard let value = Int(text), value > 0 else { throw UsageError(message: "\(option) needs a positive whole number, got '\(text)'") }
            return value
        }
    }

    /// A whole number in `range`.
    static func wholeNumber(in range: ClosedRange<Int>) -> ValueParser {
        ValueParser { text, option in
            guard let value = Int(text), range.contains(value) else {
                throw UsageError(message: "\(option) needs a whole number from \(range.lowerBound) to \(range.upperBound), got '\(text)'")
            }
            return value
        }
    }
}

extension ValueParser where Value == Double {
    /// A positive, finite number of seconds.
    static var positiveSeconds: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value > 0, value.isFinite else {
                throw UsageError(message: "\(option) needs a positive number of seconds, got '\(text)'")
            }
            return value
        }
    }

    /// A radius in output pixels: above 0, at most 10,000.
    static var radius: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value > 0, value <= 10_000 else {
                throw UsageError(message: "\(option) needs a positive number of pixels (at most 10000), got '\(text)'")
            }
            return value
        }
    }

    /// An unsharp mask's sigma in output pixels: above 0, at most 100 (the blur's bound; the
    /// server's `sh:` stops at 10, as its cost grows with sigma and a server's CPU is shared).
    static var sharpenSigma: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value > 0, value <= 100 else {
                throw UsageError(message: "\(option) needs a sigma above 0, at most 100 pixels, got '\(text)'")
            }
            return value
        }
    }
    /// A colour adjustment's factor: 0 to ``ColorAdjustment/maxFactor`` (1 leaves the picture).
    static var colorFactor: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value >= 0, value <= ColorAdjustment.maxFactor else {
                throw UsageError(message: "\(option) needs a factor from 0 to \(Int(ColorAdjustment.maxFactor)) (1 leaves the picture), got '\(text)'")
            }
            return value
        }
    }

    /// A reduction factor (source pixels per output pixel): 1 to 1,000.
    static var reduction: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value >= 1, value <= 1000 else {
                throw UsageError(message: "\(option) needs a reduction factor from 1 to 1000, got '\(text)'")
            }
            return value
        }
    }
    /// An angle in degrees, at most a million either way.
    static var degrees: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), abs(value) <= 1_000_000 else {
                throw UsageError(message: "\(option) needs an angle in degrees, got '\(text)'")
            }
            return value
        }
    }

    /// A gamma exponent: 1/``ColorAdjustment/maxFactor`` to ``ColorAdjustment/maxFactor``.
    static var gamma: ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value >= 1 / ColorAdjustment.maxFactor, value <= ColorAdjustment.maxFactor else {
                throw UsageError(message: "\(option) needs an exponent from 0.001 to \(Int(ColorAdjustment.maxFactor)) (1 leaves the picture), got '\(text)'")
            }
            return value
        }
    }

    /// A fraction: 0-1, or above 0 up to 1 unless `allowsZero`.
    static func fraction(allowsZero: Bool) -> ValueParser {
        ValueParser { text, option in
            guard let value = Double(text), value <= 1, allowsZero ? value >= 0 : value > 0 else {
                throw UsageError(message: "\(option) needs a number \(allowsZero ? "0" : "above 0")-1, got '\(text)'")
            }
            return value
        }
    }
}

/// A bounding box as vipsthumbnail takes it: `N` (N×N), `WxH`, `Wx` (width W, any height) or
/// `xH`; a free side is `nil`.
struct BoxSize: Sendable, Equatable {
    var width: Int?
    var height: Int?

    static var parser: ValueParser<BoxSize> {
        ValueParser { text, option in
            let wrong = UsageError(message: "\(option) needs N, WxH, Wx or xH in pixels, got '\(text)'")
            let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
            func side(_ part: Substring) throws -> Int? {
                if part.isEmpty { return nil }
                guard let value = Int(part), value > 0 else { throw wrong }
                return value
            }
            switch parts.count {
            case 1:
                guard let n = try side(parts[0]) else { throw wrong }
                return BoxSize(width: n, height: n)
            case 2:
                let (w, h) = (try side(parts[0]), try side(parts[1]))
                guard w != nil || h != nil else { throw wrong }
                return BoxSize(width: w, height: h)
            default:
                throw wrong
            }
        }
    }
}

extension ValueParser where Value == PixelSize {
    /// `WIDTHxHEIGHT`, both above zero (`--fill 200x100`).
    static var widthByHeight: ValueParser {
        ValueParser { text, option in
            let parts = text.lowercased().split(separator: "x")
            guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else {
                throw UsageError(message: "\(option) needs WIDTHxHEIGHT in pixels, got '\(text)'")
            }
            return PixelSize(width: w, height: h)
        }
    }
}

extension ValueParser where Value == RGBAColor {
    /// A colour as ``RGBAColor/init(parsing:)`` reads it.
    static var colour: ValueParser {
        ValueParser { text, option in
            guard let colour = RGBAColor(parsing: text) else {
                throw UsageError(message: "\(option) needs a colour name (white, black, red, …), transparent, #RRGGBB, #RRGGBBAA, #RGB "
                                 + "or R,G,B[,A] (0-255), got '\(text)'")
            }
            return colour
        }
    }
}

extension ValueParser {
    /// One of `names`, which `lookup` maps to values: "`--x` must be one of a, b, got 'c'".
    static func oneOf(_ names: @escaping @Sendable () -> [String], _ lookup: @escaping @Sendable (String) -> Value?) -> ValueParser {
        ValueParser { text, option in
            guard let value = lookup(text) else {
                throw UsageError(message: "\(option) must be one of \(names().joined(separator: ", ")), got '\(text)'")
            }
            return value
        }
    }
}

extension ValueParser where Value == ResamplingFilter {
    /// One of ``ResamplingFilter``'s names.
    static var filter: ValueParser { .oneOf({ ResamplingFilter.allCases.map(\.rawValue) }, { ResamplingFilter(rawValue: $0) }) }
}

extension ValueParser where Value == DecodingStrictness {
    /// libvips's `fail_on` names: `none`, `truncated`, `error`, `warning`.
    static var failOn: ValueParser {
        .oneOf({ DecodingStrictness.allCases.map(\.failOnName) }, { name in DecodingStrictness.allCases.first { $0.failOnName == name } })
    }
}

extension DecodingStrictness {
    /// The level's name as libvips's `fail_on` (and `--fail-on`) spells it.
    var failOnName: String {
        switch self {
        case .lenient: return "none"
        case .failsOnTruncation: return "truncated"
        case .failsOnErrors: return "error"
        case .strict: return "warning"
        }
    }
}

extension ValueParser where Value == OutputFormat {
    /// An output extension without the dot, any case (`jpg`, `PNG`, `pam`): the formats imgpipe writes.
    static var outputFormat: ValueParser { .oneOf({ OutputFormat.extensions.map(\.name) }, { OutputFormat(extension: $0) }) }
}

// MARK: - Groups every command or several share

/// The options every command takes: sources, network and caches (``Environment`` reads them),
/// `--verbose` and `--help`.
struct CommonOptions: OptionGroup {
    /// The one set of declarations (what ``Environment`` and the commands read with).
    static let declared = CommonOptions()

    let cacheDirectory = Option("cache-dir", "DIR", .sources, "disk cache directory (default: the user cache directory, imgpipe/; serve: imgpipe-serve/)", .text)
    let noDiskCache = Flag("no-disk-cache", .sources, "use no disk cache")
    let memoryCacheMB = Option("memory-cache-mb", "N", .sources, "memory cache budget in MiB, 0 for none (default 256; thumb --out-dir 32; serve 0)",
                               .wholeNumber(in: 0...Int.max))
    let maxPixels = Option("max-pixels", "N", .sources, "refuse pictures with more pixels than this (default 100000000)", .positiveInteger)
    let failOn = Option("fail-on", "LEVEL", .sources,
                        "fail on damaged input, as libvips's fail_on: none (default: the damage is a warning and what decoded is written), "
                        + "truncated (data that ends early), error (that or damage the decoder recovered from) or warning (anything; "
                        + "serve always fails on anything)",
                        .failOn)
    let timeout = Option("timeout", "S", .sources, "network connect and idle timeout in seconds (default 15; serve: 5)", .positiveSeconds)
    let concurrency = Option("concurrency", "N", .sources, "pictures loaded at once (default 8; thumb --out-dir max(8, 2 × cores))",
                             .positiveInteger)
    let publicOnly = Flag("public-only", .sources, "connect only to public internet addresses (no loopback, private or link-local)")
    let allowHost = Option("allow-host", "HOST", .sources, "fetch only from HOST, or *.HOST for its subdomains (repeatable)",
                           repeatable: true, .text)
    let verbose = Flag("verbose", .general, "print each source as it finishes")
    let help = Flag("help", short: "h", .general, "show this help")

    /// The default `--max-pixels`.
    static let defaultMaxPixels = 100_000_000
}

/// The output options several commands take, each declared once: `--out` (``Invocation/output(_:)``
/// is its one reader) and `--format`.
enum OutputOptions {
    /// `--out FILE` (`-o FILE`); `help` says what the command writes there.
    static func out(_ help: String) -> Option<String> { Option("out", short: "o", "FILE", .output, help, .text) }

    /// `--format EXT`: one of the formats imgpipe writes (``OutputFormat/extensions``).
    static func format(_ help: String) -> Option<OutputFormat> { Option("format", "EXT", .output, help, .outputFormat) }
}

/// The options `thumb`, `decode` and `convert` take: how the encoder writes (``OutputSettings``).
struct EncodingOptions: OptionGroup {
    static let declared = EncodingOptions()

    let quality = Option("quality", "Q", .output, "lossy quality 0-100 for .jpg, .webp, .avif, .heic, .jxl (default: the encoder's)",
                         .wholeNumber(in: 0...100))
    let lossless = Flag("lossless", .output, "store the pixels exactly (.webp, .jxl; .avif/.heic where libheif can)")
    let progressive = Flag("progressive", .output, "write a progressive JPEG")
    let compressionLevel = Option("compression-level", "N", .output, "PNG zlib level 0-9 (default: the encoder's, 6)",
                                  .wholeNumber(in: 0...9))
    let firstFrame = Flag("first-frame", .output, "with an animated source and a .webp or .gif output: write only the first frame "
                          + "(default: every frame, as vipsthumbnail)")
    let keepICC = Flag("keep-icc", .output, "keep the picture's colour profile: its pixels are not converted to sRGB and its ICC profile "
                       + "is embedded (default: converted to sRGB, no profile written; EXIF, XMP and comments are never written)")
    let background = Option("background", "COLOUR", .output,
                            "the colour of --pad and --flatten, and what .jpg flattens transparency onto: a name (white, red, …), "
                            + "transparent, #RRGGBB[AA] or R,G,B[,A] (defaults: transparent, white, black)", .colour)
}
