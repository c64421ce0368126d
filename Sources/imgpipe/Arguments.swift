import Foundation

/// A command-line mistake: printed with a pointer to `--help`, exit status 2.
struct UsageError: Error {
    let message: String
}

/// One option a command accepts: `--name VALUE`, or a flag `--name` when `valueName` is nil.
struct OptionSpec: Sendable {
    let name: String
    let valueName: String?
    let help: String
    /// The option may be given more than once; ``Invocation/values(_:)`` has every value.
    var repeatable = false

    /// An option that takes a value.
    static func value(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help)
    }

    /// An option that takes a value and may be given more than once.
    static func values(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: valueName, help: help, repeatable: true)
    }

    /// An option that is on or off.
    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help)
    }

    /// The options every command takes.
    static let shared: [OptionSpec] = [
        .value("cache-dir", "DIR", "disk cache directory (default: the user cache directory, imgpipe/)"),
        .flag("no-disk-cache", "use no disk cache"),
        .value("memory-cache-mb", "N", "memory cache budget in MiB (default 256; thumb --out-dir 32)"),
        .value("max-pixels", "N", "refuse pictures with more pixels than this (default 100000000)"),
        .value("timeout", "S", "network connect and idle timeout in seconds (default 15)"),
        .value("concurrency", "N", "pictures loaded at once (default 8; thumb --out-dir max(8, 2 × cores))"),
        .flag("public-only", "connect only to public internet addresses (no loopback, private or link-local)"),
        .values("allow-host", "HOST", "fetch only from HOST, or *.HOST for its subdomains (repeatable)"),
        .flag("verbose", "print each source as it finishes"),
        .flag("help", "show this help"),
    ]
}

/// The headings `imgpipe COMMAND --help` groups options under, in this order.
enum OptionGroup: String, CaseIterable, Sendable {
    case size = "size and crop"
    case processing
    case output
    case sources = "sources, network and caches"
    case general

    /// The group of option `name`; an option not listed is ``general``.
    static func of(_ name: String) -> OptionGroup { members[name] ?? .general }

    private static let members: [String: OptionGroup] = {
        let lists: [(OptionGroup, [String])] = [
            (.size, ["size", "fill", "smartcrop", "crop", "gravity", "focal"]),
            (.processing, ["blur", "corner-radius", "round", "filter", "trim", "trim-threshold", "pad", "flatten", "overlay",
                           "overlay-gravity", "overlay-opacity", "overlay-size", "overlay-offset"]),
            (.output, ["out", "out-dir", "format", "quality", "lossless", "progressive", "compression-level", "background", "keep-icc", "first-frame",
                       "previews-dir", "columns", "json", "thumbhash"]),
            (.sources, ["cache-dir", "no-disk-cache", "memory-cache-mb", "max-pixels", "timeout", "concurrency", "public-only",
                        "allow-host", "origin", "state"]),
        ]
        return Dictionary(lists.flatMap { group, names in names.map { ($0, group) } }, uniquingKeysWith: { first, _ in first })
    }()
}

/// A subcommand: its positional arguments, its options and what it does. Adding a command is
/// adding an entry to ``Command/all``.
struct Command: Sendable {
    let name: String
    /// The positional synopsis, e.g. `"SOURCE..."`.
    let synopsis: String
    let summary: String
    /// How many positionals it takes at least and at most (`nil`: no upper bound).
    let positionals: ClosedRange<Int>?
    let options: [OptionSpec]
    let run: @Sendable (Invocation) async throws -> Int32

    var allOptions: [OptionSpec] { options + OptionSpec.shared }

    /// Every command imgpipe knows.
    static let all: [Command] = [.info, .thumb, .decode, .convert, .frames, .sheet, .fetch, .demo]

    /// `imgpipe --version`.
    static let version = "imgpipe 0.1.0"

    /// The one-letter options, as vipsthumbnail and ImageMagick users type them (`-s 128`,
    /// `-s128`, `-o out.jpg`): each stands for the long option a command has by that name.
    static let shortOptions: [Character: String] = ["s": "size", "o": "out", "h": "help"]

    /// `imgpipe --help`.
    static var overview: String {
        var lines = ["usage: imgpipe COMMAND [ARGUMENTS] [OPTIONS]", "", "commands:"]
        for command in all { lines.append("  " + command.name.padding(toLength: 8, withPad: " ", startingAt: 0) + command.summary) }
        lines += ["", "A SOURCE is a path, a file:// URL or an http(s):// URL; '-' reads sources from stdin, one a line.",
                  "Run 'imgpipe COMMAND --help' for a command's options; -s is --size, -o is --out; --version."]
        return lines.joined(separator: "\n")
    }

    /// `imgpipe COMMAND --help`: the options under their ``OptionGroup`` headings.
    var help: String {
        var lines = ["usage: imgpipe \(name) \(synopsis)", "", summary]
        for group in OptionGroup.allCases {
            let members = allOptions.filter { OptionGroup.of($0.name) == group }
            guard !members.isEmpty else { continue }
            lines += ["", "\(group.rawValue):"]
            for option in members {
                let left = "--\(option.name)" + (option.valueName.map { " \($0)" } ?? "")
                lines.append("  " + left.padding(toLength: 22, withPad: " ", startingAt: 0) + option.help)
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// A parsed command line: the command, its positionals in order, its options by name.
struct Invocation: Sendable {
    let command: Command
    let positionals: [String]
    /// Each option's value (the last, for a repeatable option given more than once).
    let options: [String: String]
    /// Every value of each repeatable option, in order.
    var repeated: [String: [String]] = [:]

    /// Parses `arguments` (without the program name): `--name VALUE`, `--name=VALUE`, flags.
    static func parse(_ arguments: [String], commands: [Command]) throws -> Invocation {
        guard let name = arguments.first else { throw UsageError(message: "no command given (try 'imgpipe --help')") }
        guard let command = commands.first(where: { $0.name == name }) else {
            let guess = nearest(to: name, among: commands.map(\.name)).map { "did you mean '\($0)'? " } ?? ""
            throw UsageError(message: "unknown command '\(name)' (\(guess)commands: \(commands.map(\.name).joined(separator: ", ")))")
        }
        var positionals: [String] = []
        var options: [String: String] = [:]
        var repeated: [String: [String]] = [:]
        var rest = arguments.dropFirst()
        var onlyPositionals = false
        while let argument = rest.popFirst() {
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            var optionName: String
            var inlineValue: String?
            if argument.hasPrefix("--") {
                optionName = String(argument.dropFirst(2))
                if let equals = optionName.firstIndex(of: "=") {
                    inlineValue = String(optionName[optionName.index(after: equals)...])
                    optionName = String(optionName[..<equals])
                }
            } else if let letter = argument.dropFirst().first, let long = Command.shortOptions[letter],
                      command.allOptions.contains(where: { $0.name == long }) {
                // `-s 128` or `-s128`.
                optionName = long
                let attached = argument.dropFirst(2)
                inlineValue = attached.isEmpty ? nil : String(attached)
            } else {
                let short = Command.shortOptions.filter { long in command.allOptions.contains { $0.name == long.value } }
                let known = short.keys.sorted().map { "-\($0)" }.joined(separator: ", ")
                throw UsageError(message: "unknown option '\(argument)' for '\(name)' (one-letter options: \(known); see 'imgpipe \(name) --help')")
            }
            guard let spec = command.allOptions.first(where: { $0.name == optionName }) else {
                let guess = nearest(to: optionName, among: command.allOptions.map(\.name)).map { "did you mean '--\($0)'? " } ?? ""
                throw UsageError(message: "unknown option '--\(optionName)' for '\(name)' (\(guess)see 'imgpipe \(name) --help')")
            }
            if let valueName = spec.valueName {
                guard let value = inlineValue ?? rest.popFirst() else {
                    throw UsageError(message: "'--\(optionName)' needs a value \(valueName)")
                }
                options[optionName] = value
                if spec.repeatable { repeated[optionName, default: []].append(value) }
            } else {
                guard inlineValue == nil else { throw UsageError(message: "'--\(optionName)' takes no value") }
                options[optionName] = ""
            }
        }
        let invocation = Invocation(command: command, positionals: positionals, options: options, repeated: repeated)
        if invocation.flag("help") { return invocation }
        if let range = command.positionals, !range.contains(positionals.count) {
            let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError(message: "'\(name)' takes \(expected) argument(s) (\(command.synopsis)), got \(positionals.count)")
        } else if command.positionals == nil, positionals.isEmpty, command.name != "sheet" {
            throw UsageError(message: "'\(name)' needs at least one SOURCE")
        }
        return invocation
    }

    /// `options` with `name` set to `value`: for a command whose positional stands for an
    /// option (`convert IN OUT` is `convert IN --out OUT`).
    func setting(_ name: String, to value: String, positionals: [String]) -> Invocation {
        var options = options
        options[name] = value
        return Invocation(command: command, positionals: positionals, options: options, repeated: repeated)
    }

    /// Whether flag `name` was given.
    func flag(_ name: String) -> Bool { options[name] != nil }

    /// Every value of repeatable option `name`, in the order given.
    func values(_ name: String) -> [String] { repeated[name] ?? [] }

    /// The value of option `name` as a positive integer, `fallback` when absent.
    func positiveInteger(_ name: String, default fallback: Int? = nil) throws -> Int {
        guard let text = options[name] else {
            if let fallback { return fallback }
            throw UsageError(message: "'imgpipe \(command.name)' needs --\(name) N")
        }
        guard let value = Int(text), value > 0 else {
            throw UsageError(message: "--\(name) needs a positive whole number, got '\(text)'")
        }
        return value
    }

    /// The value of option `name` as a positive number of seconds, `fallback` when absent.
    func positiveSeconds(_ name: String, default fallback: Double) throws -> Double {
        guard let text = options[name] else { return fallback }
        guard let value = Double(text), value > 0, value.isFinite else {
            throw UsageError(message: "--\(name) needs a positive number of seconds, got '\(text)'")
        }
        return value
    }

    /// A bounding box option as vipsthumbnail takes it: `N` (N×N), `WxH`, `Wx` (width W, any
    /// height) or `xH`; the free side is `unbounded`. `nil` when absent.
    func box(_ name: String, unbounded: Int) throws -> (width: Int, height: Int)? {
        guard let text = options[name] else { return nil }
        let wrong = UsageError(message: "--\(name) needs N, WxH, Wx or xH in pixels, got '\(text)'")
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        func side(_ part: Substring) throws -> Int? {
            if part.isEmpty { return nil }
            guard let value = Int(part), value > 0 else { throw wrong }
            return value
        }
        switch parts.count {
        case 1:
            guard let n = try side(parts[0]) else { throw wrong }
            return (n, n)
        case 2:
            let (w, h) = (try side(parts[0]), try side(parts[1]))
            guard w != nil || h != nil else { throw wrong }
            return (w ?? unbounded, h ?? unbounded)
        default:
            throw wrong
        }
    }

    /// A `WxH` size option, e.g. `--fill 200x100`.
    func size(_ name: String) throws -> (width: Int, height: Int)? {
        guard let text = options[name] else { return nil }
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else {
            throw UsageError(message: "--\(name) needs WIDTHxHEIGHT in pixels, got '\(text)'")
        }
        return (w, h)
    }

    /// The `--out` path, which must end in one of `extensions`.
    func output(allowed extensions: [String]) throws -> String {
        guard let path = options["out"], !path.isEmpty else { throw UsageError(message: "'imgpipe \(command.name)' needs --out FILE") }
        let ext = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        guard path.contains("."), extensions.contains(ext) else {
            throw UsageError(message: "--out must end in \(extensions.map { "." + $0 }.joined(separator: " or ")): '\(path)'")
        }
        return path
    }
}

/// The name in `names` closest to a mistyped `name` (at most two edits away, a swap of two
/// neighbouring letters counting one, and fewer edits than half its letters), for "did you
/// mean": `szie` → `size`.
func nearest(to name: String, among names: [String]) -> String? {
    /// Edits between `a` and `b`: insertions, deletions, substitutions and swaps of neighbours.
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        var rows = [Array(0...b.count)]
        for i in 1...Swift.max(a.count, 1) where !a.isEmpty {
            var row = [i] + Array(repeating: 0, count: b.count)
            for j in 1...Swift.max(b.count, 1) where !b.isEmpty {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                row[j] = Swift.min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { row[j] = Swift.min(row[j], rows[i - 2][j - 2] + 1) }
            }
            rows.append(row)
        }
        return rows[a.count][b.count]
    }
    let typed = Array(name.lowercased())
    let scored = names.map { ($0, distance(typed, Array($0))) }.filter { $0.1 <= 2 && $0.1 * 2 < Swift.max(typed.count, 2) }
    return scored.min { $0.1 < $1.1 }?.0
}
