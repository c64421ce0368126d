import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// imgproxy's `IMGPROXY_ALLOWED_SOURCES`: source URL prefixes, judged so that the text checked
/// names the host that is fetched.
///
/// A bare prefix test on the text lets `https://cdn.example.com@evil.example/a.jpg` (a user name,
/// then another host), `https://cdn.example.com.evil.example/` and `https://cdn.example.com:8443/`
/// through a prefix `https://cdn.example.com`, and `https://cdn.example.com/public/../private/x`
/// through `https://cdn.example.com/public/` (curl removes the dot segments before it asks). So a
/// source is under a prefix when:
/// - its scheme and authority (`scheme://host:port`) equal the prefix's, without regard to case,
///   and hold no `@`, `\`, space or control character (a user name or a text parsers read
///   differently);
/// - its path, query and fragment start with the prefix's (`/` when the prefix names none);
/// - its path has no `.` or `..` segment, written plainly or percent-encoded (`%2e`), between
///   separators written plainly or percent-encoded (`%2F`, `%5C`, `\`).
/// A prefix without `://` (`local:`) is a plain prefix of the text.
enum AllowedSources {
    /// Whether `source` (the decoded source URL text) is under one of `prefixes`.
    static func allows(_ source: String, prefixes: [String]) -> Bool {
        prefixes.contains { allows(source, prefix: $0) }
    }

    /// Whether `source` is under `prefix`.
    static func allows(_ source: String, prefix: String) -> Bool {
        guard let wanted = split(prefix) else { return source.hasPrefix(prefix) }
        guard let given = split(source), wanted.origin.lowercased() == given.origin.lowercased(),
              !given.origin.unicodeScalars.contains(where: { "@\\".unicodeScalars.contains($0) || $0.value <= 0x20 || $0.value == 0x7F })
        else { return false }
        // The path's segments as an origin may read them: `%2F`, `%5C` and `\` separate too.
        var path = String(given.rest.prefix { $0 != "?" && $0 != "#" })
        for (encoded, plain) in [("%2e", "."), ("%2f", "/"), ("%5c", "/"), ("\\", "/")] {
            path = path.replacingOccurrences(ofASCII: encoded, with: plain, caseInsensitive: true)
        }
        let hasDotSegment = path.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == "." || $0 == ".." }
        return !hasDotSegment && (given.rest.isEmpty ? "/" : given.rest).hasPrefix(wanted.rest.isEmpty ? "/" : wanted.rest)
    }

    /// `text` split after its authority: `https://cdn.example.com` and `/a.jpg?x=1`; `nil` when
    /// it has no `://`.
    private static func split(_ text: String) -> (origin: Substring, rest: Substring)? {
        guard let marker = text.firstRange(of: "://") else { return nil }
        let end = text[marker.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        return (text[..<end], text[end...])
    }
}
