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

    /// `imgpipe --help`.
    static var overview: String {
        var lines = ["usage: imgpipe COMMAND [ARGUMENTS] [OPTIONS]", "", "commands:"]
        for command in all { lines.append("  " + command.name.padding(toLength: 8, withPad: " ", startingAt: 0) + command.summary) }
        lines += ["", "A SOURCE is a path, a file:// URL or an http(s):// URL; '-' reads sources from stdin, one a line.",
                  "Run 'imgpipe COMMAND --help' for a command's options."]
        return lines.joined(separator: "\n")
    }

    /// `imgpipe COMMAND --help`.
    var help: String {
        var lines = ["usage: imgpipe \(name) \(synopsis)", "", summary, "", "options:"]
        for option in allOptions {
            let left = "--\(option.name)" + (option.valueName.map { " \($0)" } ?? "")
            lines.append("  " + left.padding(toLength: 22, withPad: " ", startingAt: 0) + option.help)
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
            throw UsageError(message: "unknown command '\(name)' (commands: \(commands.map(\.name).joined(separator: ", ")))")
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
            if argument == "-h" { options["help"] = ""; continue }
            guard argument.hasPrefix("--") else {
                throw UsageError(message: "unknown option '\(argument)' for '\(name)' (see 'imgpipe \(name) --help')")
            }
            var optionName = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = optionName.firstIndex(of: "=") {
                inlineValue = String(optionName[optionName.index(after: equals)...])
                optionName = String(optionName[..<equals])
            }
            guard let spec = command.allOptions.first(where: { $0.name == optionName }) else {
                throw UsageError(message: "unknown option '--\(optionName)' for '\(name)' (see 'imgpipe \(name) --help')")
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
