#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Text that came from outside — a URL, a file name, a server's header value, a codec's or a C
/// library's message — made fit for one line of a message a person reads: bounded in length,
/// and with every character that could move the cursor, recolour or retitle a terminal, or
/// reorder what is shown written as a visible escape.
///
/// A server that answers `Content-Encoding: x\e]0;TITLE\a` sets the title of the terminal
/// that prints the error raw, and a failing 13 MB `data:` URL makes a 13 MB error line. The
/// pipeline's errors (``ImagePipelineError``, the loaders' and the codecs' own) build their
/// descriptions with these functions. They are public because third-party loaders, decoders
/// and processors write messages too, with outside text of their own in them: with
/// ``escaped(_:limit:)`` and ``url(_:limit:)`` theirs are as safe to print as ours.
///
/// The escapes are for reading, not for parsing back: a `\` already in the text is kept as
/// it is, so a text escaped twice reads the same as once (and a message that embeds an
/// escaped message stays as it was).
public enum MessageText {
    /// The most characters ``url(_:limit:)`` shows of a URL by default: 200.
    ///
    /// Enough for the scheme, the host, the port and a telling part of the path of every
    /// ordinary picture URL (a CDN URL with a signed query runs to 150–300), while an error
    /// line that names one stays within two or three lines of a terminal. The full URL is
    /// still in the error's value (``ImagePipelineError/url``) for a program to use.
    public static let urlLimit = 200

    /// The most characters ``escaped(_:limit:)`` keeps of a text by default: 400.
    ///
    /// The C libraries' own messages are shorter (curl's error buffer holds 256 bytes,
    /// libjpeg's and libpng's messages 200, lcms2's 1024 but its real ones under 100), so a
    /// real message is never cut; only a message that carries a hostile header value or a
    /// file's contents is.
    public static let textLimit = 400

    /// The smallest limit honoured: room for the ellipsis and the length that end a cut text.
    static let minimumLimit = 40

    /// `url` as a message names it: a file URL's path, any other URL's absolute string
    /// without a password; ``escaped(_:limit:)`` to at most `limit` characters, so that a long
    /// one keeps its scheme, host, port and the start of its path, and says how long it was:
    /// `data:image/png;base64,iVBORw0KGgo… (13,300,012 characters)`.
    public static func url(_ url: URL, limit: Int = urlLimit) -> String {
        if url.isFileURL { return escaped(url.path, limit: limit) }
        return escaped(withoutPassword(url), limit: limit)
    }

    /// `text` with every character that ``needsEscaping(_:)`` written as an escape (`\n`, `\r`,
    /// `\t`, else `\u{1B}`-style), and at most `limit` characters long (a limit under 40 counts
    /// as 40): a longer text is cut at `limit` less room for an ellipsis and its
    /// length in characters (Unicode scalars): `iVBORw0KGgo… (13,300,012 characters)`.
    ///
    /// - Complexity: O(`limit`) for the kept part, plus one pass to count a text that is cut.
    public static func escaped(_ text: some StringProtocol, limit: Int = textLimit) -> String {
        let limit = max(limit, minimumLimit)
        var length = 0
        var fits = true
        for scalar in text.unicodeScalars {
            length += needsEscaping(scalar) ? escape(scalar).unicodeScalars.count : 1
            if length > limit {
                fits = false
                break
            }
        }
        let suffix = fits ? "" : "… (\(groupedCount(text.unicodeScalars.count)) characters)"
        let room = limit - suffix.unicodeScalars.count
        var result = String.UnicodeScalarView()
        var kept = 0
        for scalar in text.unicodeScalars {
            if needsEscaping(scalar) {
                let escape = escape(scalar).unicodeScalars
                guard fits || kept + escape.count <= room else { break }
                result.append(contentsOf: escape)
                kept += escape.count
            } else {
                guard fits || kept < room else { break }
                result.append(scalar)
                kept += 1
            }
        }
        return String(result) + suffix
    }

    /// Whether `scalar` is written as an escape: a C0 or C1 control or DEL (they move the
    /// cursor, start terminal sequences, end lines), a line or paragraph separator, or a format
    /// character (the bidirectional overrides and isolates that show text in another order,
    /// zero-width spaces, the byte-order mark, tags) other than the zero-width joiner and
    /// non-joiner, which emoji and several scripts need.
    public static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) { return true }
        if scalar.isASCII { return false }
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator: return true
        case .format: return scalar.value != 0x200C && scalar.value != 0x200D
        default: return false
        }
    }

    /// The escape for `scalar`: `\n`, `\r`, `\t`, else `\u{` its hexadecimal value, two digits
    /// at least `}` (`\u{1B}`, `\u{202E}`).
    static func escape(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        default:
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "\\u{\(hex.count < 2 ? "0" + hex : hex)}"
        }
    }

    /// What bytes that are not a picture look like, for a message: text (ASCII letters,
    /// digits, punctuation and white space, a UTF-8 byte-order mark skipped) in quotes,
    /// escaped: `"<!doctype html><…"`; anything else as hexadecimal bytes:
    /// `00 00 01 BA 44 00 04 00` (an MPEG stream). At most 16 bytes shown, with `…` when
    /// there were more.
    public static func leadingBytes(_ bytes: Data) -> String {
        var bytes = bytes[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let shown = bytes.prefix(16), more = bytes.count > 16 ? "…" : ""
        if shown.allSatisfy({ (0x20..<0x7F).contains($0) || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return "\"" + escaped(String(decoding: shown, as: UTF8.self)) + more + "\""
        }
        return shown.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count < 2 ? "0" + hex : hex
        }.joined(separator: " ") + more
    }

    /// `url`'s absolute string, without the password of its user information
    /// (`https://user@host/`): a message must not carry a secret into a log.
    private static func withoutPassword(_ url: URL) -> String {
        guard url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url.absoluteString
        }
        components.password = nil
        return components.string ?? url.absoluteString
    }
}
