#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How many positional arguments a command takes.
enum Positionals: Sendable {
    /// Between these bounds (`convert SOURCE [OUT]`: 1...2).
    case count(ClosedRange<Int>)
    /// One SOURCE or more.
    case sources
    /// Any number of SOURCEs, none included (`sheet`: the bundled samples).
    case anySources
}

/// A subcommand: its positional arguments, its option table and what it does. Adding a command
/// is adding an entry to ``Command/all`` with its own ``OptionGroup``; the ``CommonOptions`` are
/// added to every table.
struct Command: Sendable {
    let name: String
    /// The positional synopsis, e.g. `"SOURCE..."`.
    let synopsis: String
    let summary: String
    let positionals: Positionals
    /// Every option it takes, its own first, then ``CommonOptions``: what parsing, validation,
    /// help and "did you mean" read.
    let table: [OptionSpec]
    let run: @Sendable (Invocation) async throws -> Int32

    /// A command whose options are `options`' declarations; `run` reads their values through them.
    /// `ignoredCommon` names ``CommonOptions`` the command has no use for (left out of its table,
    /// so giving one is a usage error, not silently ignored).
    init<Options: OptionGroup>(name: String, synopsis: String, summary: String, positionals: Positionals, options: Options,
                               ignoredCommon: Set<String> = [],
                               run: @escaping @Sendable (Options, Invocation) async throws -> Int32) {
        self.name = name
        self.synopsis = synopsis
        self.summary = summary
        self.positionals = positionals
        table = options.table + CommonOptions.declared.table.filter { !ignoredCommon.contains($0.name) }
        self.run = { invocation in try await run(options, invocation) }
    }

    /// Every command imgpipe knows.
    static let all: [Command] = [.info, .thumb, .decode, .convert, .frames, .sheet, .fetch, .serve, .demo]

    /// `imgpipe --version`.
    static let version = "imgpipe 0.1.0"

    /// `imgpipe --help`.
    static var overview: String {
        var lines = ["usage: imgpipe COMMAND [ARGUMENTS] [OPTIONS]", "", "commands:"]
        for command in all { lines.append("  " + padded(command.name, to: 8) + command.summary) }
        let shorts = Dictionary(all.flatMap(\.table).compactMap { spec in spec.short.map { ($0, spec.name) } }, uniquingKeysWith: { a, _ in a })
        let oneLetter = shorts.keys.sorted().map { "-\($0) is --\(shorts[$0] ?? "")" }.joined(separator: ", ")
        lines += ["", "A SOURCE is a path, a file:// URL or an http(s):// URL; '-' reads sources from stdin, one a line.",
                  "Run 'imgpipe COMMAND --help' for a command's options; \(oneLetter); --version."]
        return lines.joined(separator: "\n")
    }

    /// `imgpipe COMMAND --help`: the options of the table under their ``HelpHeading``s.
    var help: String {
        var lines = ["usage: imgpipe \(name) \(synopsis)", "", summary]
        for heading in HelpHeading.allCases {
            let members = table.filter { $0.heading == heading }
            guard !members.isEmpty else { continue }
            lines += ["", "\(heading.rawValue):"]
            for option in members {
                let help = (option.short.map { "(-\($0)) " } ?? "") + option.help
                // At least two spaces between the option and its help (`--overlay-gravity SIDE` is 22 long).
                lines.append("  " + padded(option.usage, to: max(22, option.usage.count + 2)) + help)
            }
        }
        return lines.joined(separator: "\n")
    }
}

/// A parsed command line: the command, its positionals in order, and the typed value of each
/// option given, read through its declaration (`invocation[options.size]`).
struct Invocation: Sendable {
    let command: Command
    let positionals: [String]
    /// Every value of each option given, in order, by option name: only the parser and the
    /// typed subscripts below touch it.
    private var values: [String: [any Sendable]]

    /// The value of `option`, the last one given; `nil` when it was not given.
    subscript<Value>(option: Option<Value>) -> Value? { values[option.spec.name]?.last as? Value }

    /// Whether `flag` was given.
    subscript(flag: Flag) -> Bool { values[flag.spec.name] != nil }

    /// Every value of repeatable `option`, in the order given.
    func all<Value>(_ option: Option<Value>) -> [Value] { values[option.spec.name]?.compactMap { $0 as? Value } ?? [] }

    /// Whether `option` was given (for "--x goes with --y").
    func has(_ option: some OptionDeclaration) -> Bool { values[option.spec.name] != nil }

    /// The first of `options` that was given.
    func firstGiven(_ options: [any OptionDeclaration]) -> OptionSpec? {
        options.lazy.map(\.spec).first { values[$0.name] != nil }
    }

    /// This invocation with `option` set to `value` and `positionals`: for a command whose
    /// positional stands for an option (`convert IN OUT` is `convert IN --out OUT`).
    func setting<Value>(_ option: Option<Value>, to value: Value, positionals: [String]) -> Invocation {
        var values = values
        values[option.spec.name] = [value]
        return Invocation(command: command, positionals: positionals, values: values)
    }

    /// Whether `--help` (`-h`) was given.
    var wantsHelp: Bool { self[CommonOptions.declared.help] }

    /// The `--out` path (``OutputOptions/out(_:)``): the one place its value is required and checked.
    /// - Throws: ``UsageError`` when it is missing or empty.
    func output(_ option: Option<String>) throws -> String {
        guard let path = self[option], !path.isEmpty else { throw UsageError(message: "'imgpipe \(command.name)' needs --out FILE") }
        return path
    }

    /// The `--out` path, which must end in one of `extensions`.
    func output(_ option: Option<String>, allowed extensions: [String]) throws -> String {
        let path = try output(option)
        let ext = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
        guard path.contains("."), extensions.contains(ext) else {
            throw UsageError(message: "--out must end in \(extensions.map { "." + $0 }.joined(separator: " or ")): '\(path)'")
        }
        return path
    }

    /// Parses `arguments` (without the program name) against the command's table: `--name
    /// VALUE`, `--name=VALUE`, flags, one-letter forms (`-s 128`, `-s128`), `--`. Each value is
    /// converted to its option's type here, so a bad value is a usage error before anything runs.
    static func parse(_ arguments: [String], commands: [Command]) throws -> Invocation {
        guard let name = arguments.first else { throw UsageError(message: "no command given (try 'imgpipe --help')") }
        guard let command = commands.first(where: { $0.name == name }) else {
            let guess = nearest(to: name, among: commands.map(\.name)).map { "did you mean '\($0)'? " } ?? ""
            throw UsageError(message: "unknown command '\(name)' (\(guess)commands: \(commands.map(\.name).joined(separator: ", ")))")
        }
        var positionals: [String] = []
        var given: [(spec: OptionSpec, text: String?)] = []
        var rest = arguments.dropFirst()
        var onlyPositionals = false
        while let argument = rest.popFirst() {
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            let spec: OptionSpec
            var inlineValue: String?
            if argument.hasPrefix("--") {
                var optionName = String(argument.dropFirst(2))
                if let equals = optionName.firstIndex(of: "=") {
                    inlineValue = String(optionName[optionName.index(after: equals)...])
                    optionName = String(optionName[..<equals])
                }
                guard let match = command.table.first(where: { $0.name == optionName }) else {
                    let guess = nearest(to: optionName, among: command.table.map(\.name)).map { "did you mean '--\($0)'? " } ?? ""
                    throw UsageError(message: "unknown option '--\(optionName)' for '\(name)' (\(guess)see 'imgpipe \(name) --help')")
                }
                spec = match
            } else if let letter = argument.dropFirst().first, let match = command.table.first(where: { $0.short == letter }) {
                // `-s 128` or `-s128`.
                spec = match
                let attached = argument.dropFirst(2)
                inlineValue = attached.isEmpty ? nil : String(attached)
            } else {
                let known = command.table.compactMap(\.short).sorted().map { "-\($0)" }.joined(separator: ", ")
                throw UsageError(message: "unknown option '\(argument)' for '\(name)' (one-letter options: \(known); see 'imgpipe \(name) --help')")
            }
            if let valueName = spec.valueName {
                guard let value = inlineValue ?? rest.popFirst() else { throw UsageError(message: "'--\(spec.name)' needs a value \(valueName)") }
                given.append((spec, value))
            } else {
                guard inlineValue == nil else { throw UsageError(message: "'--\(spec.name)' takes no value") }
                given.append((spec, nil))
            }
        }
        if given.contains(where: { $0.spec.name == CommonOptions.declared.help.spec.name }) {
            return Invocation(command: command, positionals: positionals, values: [CommonOptions.declared.help.spec.name: [true]])
        }
        switch command.positionals {
        case .count(let range) where !range.contains(positionals.count):
            let expected = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError(message: "'\(name)' takes \(expected) argument(s) (\(command.synopsis)), got \(positionals.count)")
        case .sources where positionals.isEmpty:
            throw UsageError(message: "'\(name)' needs at least one SOURCE")
        default:
            break
        }
        var values: [String: [any Sendable]] = [:]
        for (spec, text) in given {
            let value = try text.map(spec.convert) ?? true
            // Given again, a value replaces the earlier one unless the option is repeatable.
            values[spec.name] = spec.repeatable ? (values[spec.name] ?? []) + [value] : [value]
        }
        return Invocation(command: command, positionals: positionals, values: values)
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

/// `text.padding(toLength: length, withPad: " ", startingAt: 0)`: cut or padded with spaces to
/// `length` UTF-16 units.
private func padded(_ text: String, to length: Int) -> String {
    let units = text.utf16.count
    return units >= length ? String(decoding: Array(text.utf16.prefix(length)), as: UTF16.self)
                           : text + String(repeating: " ", count: length - units)
}
