/// A command-line mistake: printed with the usage text, exit status 2.
struct UsageError: Error {
    let message: String
}

/// One `--name VALUE` option a command accepts.
struct OptionSpec {
    let name: String
    let valueName: String
    let help: String
    let required: Bool
}

/// A subcommand: its positional arguments, its options and what it does. Adding a command is
/// adding an entry to ``Command/all``.
struct Command: Sendable {
    let name: String
    let positionals: [String]
    let options: [OptionSpec]
    let summary: String
    let run: @Sendable (Invocation) async throws -> Void

    /// Every command imgpipe knows.
    static let all: [Command] = [.thumb]

    /// The usage text, built from the table.
    static var usage: String {
        var lines = ["usage:"]
        for command in all {
            let options = command.options.map { $0.required ? "--\($0.name) \($0.valueName)" : "[--\($0.name) \($0.valueName)]" }
            lines.append("  imgpipe " + ([command.name] + command.positionals + options).joined(separator: " "))
            lines.append("      \(command.summary)")
            for option in command.options { lines.append("      --\(option.name) \(option.valueName): \(option.help)") }
        }
        return lines.joined(separator: "\n")
    }
}

/// A parsed command line: the command, its positionals in order, its options by name.
struct Invocation: Sendable {
    let command: Command
    let positionals: [String]
    let options: [String: String]

    /// Parses `arguments` (without the program name) against `commands`.
    static func parse(_ arguments: [String], commands: [Command]) throws -> Invocation {
        guard let name = arguments.first else { throw UsageError(message: "no command given") }
        guard let command = commands.first(where: { $0.name == name }) else {
            throw UsageError(message: "unknown command '\(name)'")
        }
        var positionals: [String] = []
        var options: [String: String] = [:]
        var rest = arguments.dropFirst()
        while let argument = rest.popFirst() {
            guard argument.hasPrefix("--") else { positionals.append(argument); continue }
            let optionName = String(argument.dropFirst(2))
            guard command.options.contains(where: { $0.name == optionName }) else {
                throw UsageError(message: "unknown option '\(argument)' for '\(name)'")
            }
            guard let value = rest.popFirst() else { throw UsageError(message: "'\(argument)' needs a value") }
            options[optionName] = value
        }
        guard positionals.count == command.positionals.count else {
            throw UsageError(message: "'\(name)' takes \(command.positionals.joined(separator: " ")), got \(positionals.count) arguments")
        }
        for option in command.options where option.required && options[option.name] == nil {
            throw UsageError(message: "'\(name)' needs --\(option.name) \(option.valueName)")
        }
        return Invocation(command: command, positionals: positionals, options: options)
    }

    /// The value of option `name` as a positive integer.
    func positiveInteger(_ name: String) throws -> Int {
        guard let text = options[name], let value = Int(text), value > 0 else {
            throw UsageError(message: "--\(name) needs a positive whole number, got '\(options[name] ?? "")'")
        }
        return value
    }
}
