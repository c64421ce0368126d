import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Named option lists (imgproxy's `IMGPROXY_PRESETS`: `name=rs:fit:300:300/q:80,…`); the preset
/// named `default` applies to every URL, first, and `preset:a:b` (`pr:a:b`) applies `a` then `b`
/// where it stands in the URL.
public struct Presets: Sendable, Hashable {
    /// Why a presets text cannot be used: found when the server starts, never on a request.
    public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
        /// One line naming the preset and what is wrong with it.
        public var message: String

        public var description: String { message }
    }

    /// The presets' option segments by name (`["rs:fit:300:300", "q:80"]`).
    public var byName: [String: [String]]

    /// No presets.
    public init() { byName = [:] }

    /// The presets of imgproxy's `IMGPROXY_PRESETS` text: `name=option/option/…` entries
    /// separated by commas (or lines); blank entries and entries starting with `#` are skipped.
    /// Every preset is applied once to default options here, so a bad one stops the server's
    /// start instead of failing its requests.
    /// - Throws: ``ConfigurationError`` for an entry without `=`, an empty name or value, a
    ///   name given twice, a segment that is not an option, an option this server refuses or
    ///   reads as out of range, an unknown preset named, or presets that name themselves.
    public init(parsing text: String) throws(ConfigurationError) {
        byName = [:]
        for entry in text.split(whereSeparator: { $0 == "," || $0 == "\n" || $0 == "\r" }) {
            let entry = entry.trimmingSpacesAndTabs()
            if entry.isEmpty || entry.hasPrefix("#") { continue }
            let parts = entry.split(separator: "=", omittingEmptySubsequences: false)
            let shown = MessageText.escaped(entry, limit: 80)
            guard parts.count == 2 else { throw ConfigurationError(message: "preset entry \"\(shown)\" is not name=options") }
            let name = parts[0].trimmingSpacesAndTabs()
            let value = parts[1].trimmingSpacesAndTabs()
            guard !name.isEmpty else { throw ConfigurationError(message: "preset entry \"\(shown)\" has no name") }
            guard !value.isEmpty else { throw ConfigurationError(message: "preset \(name) has no options") }
            guard byName[name] == nil else { throw ConfigurationError(message: "preset \(name) is defined twice") }
            let segments = value.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            if let bad = segments.first(where: { !$0.contains(":") }) {
                throw ConfigurationError(message: "preset \(name): \"\(MessageText.escaped(bad, limit: 60))\" is not an option (name:arguments)")
            }
            byName[name] = segments
        }
        for name in byName.keys.sorted() {
            var parser = OptionParser(presets: self)
            var options = RenderOptions()
            do {
                try parser.apply("preset", [name], to: &options)
                try OptionParser.validate(options)
            } catch {
                throw ConfigurationError(message: "preset \(name): \(error.message)")
            }
        }
    }
}
