import Foundation
import ImagePipelineKit
import Testing

@testable import imgpipe

/// An encoder of a format the package does not ship: what a codec added to the kit looks like.
private struct FarbfeldEncoder: ImageEncoding {
    static let farbfeld = ImageFormat("farbfeld", mimeType: "image/x-farbfeld", fileExtension: "ff")
    var format: ImageFormat { Self.farbfeld }
    func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data { Data() }
}

/// imgpipe's codecs are the kit's: its output formats, extensions and help are computed from
/// `EncoderRegistry.standard`, its decoders are `DecoderRegistry.standard`'s.
@Suite("imgpipe codecs", .timeLimit(.minutes(1)))
struct ImgpipeCodecListTests {
    /// Fails when imgpipe keeps a list of its own that differs from the kit's (GIF was missing
    /// from the kit's encoders while imgpipe wrote .gif).
    @Test func imgpipeWritesAndReadsExactlyTheKitsCodecs() {
        let written = Set(OutputFormat.extensions.compactMap(\.format.imageFormat))
        #expect(written == EncoderRegistry.standard.formats)
        #expect(Encoders.registry.formats == EncoderRegistry.standard.formats)
        #expect(Environment.decoders.formats == DecoderRegistry.standard.formats)
        #expect(EncoderRegistry.standard.formats.isSuperset(of: [.jpeg, .png, .webp, .avif, .heif, .gif, .jxl]))
        // Every extension imgpipe knows is one it can write (PAM is its own).
        #expect(OutputFormat.writableExtensions == OutputFormat.extensions.map(\.name))
        let kitExtensions = Set(EncoderRegistry.standard.formats.compactMap(\.fileExtension))
        #expect(Set(OutputFormat.extensions.map(\.name)) == kitExtensions.union(["jpeg", "pam"]))
    }

    /// A codec added to the kit's registry is an output extension, a `--format` value and a
    /// name in the help, by the same functions imgpipe's own lists come from.
    @Test func aCodecAddedToTheKitIsAnOutputWithNoImgpipeEdit() {
        let extended = EncoderRegistry.standard.registering(FarbfeldEncoder())
        let extensions = OutputFormat.extensions(writtenBy: extended)
        #expect(extensions.map(\.name) == OutputFormat.extensions(writtenBy: .standard).map(\.name).dropLast() + ["ff", "pam"])
        #expect(extensions.first { $0.name == "ff" }?.format == .encoded(FarbfeldEncoder.farbfeld))
        #expect(OutputFormat.extensions.map(\.name) == OutputFormat.extensions(writtenBy: .standard).map(\.name))
        #expect(OutputFormat.extensions.map(\.name) == ["jpg", "jpeg", "png", "webp", "avif", "heic", "gif", "jxl", "pam"])
    }

    /// The help and the messages list what imgpipe writes, from ``OutputFormat/extensions``.
    @Test func theHelpListsEveryWritableFormat() {
        for name in OutputFormat.extensions.map(\.name) {
            #expect(Command.thumb.help.contains(".\(name)"), "thumb --out lists .\(name)")
            #expect(Command.convert.help.contains(".\(name)"), "convert --out lists .\(name)")
        }
        let formatLine = Command.thumb.help.split(separator: "\n").first { $0.hasPrefix("  --format ") } ?? ""
        for (name, format) in OutputFormat.extensions where name == format.fileExtension {
            #expect(formatLine.contains(name), "thumb --format lists \(name): \(formatLine)")
        }
    }
}

/// The option table: parsing, validation, help and "did you mean" all come from it.
@Suite("imgpipe options", .timeLimit(.minutes(1)))
struct ImgpipeOptionTableTests {
    /// The usage error `arguments` give, or `nil`.
    static func usageError(_ arguments: [String]) -> String? {
        do {
            _ = try Invocation.parse(arguments, commands: Command.all)
            return nil
        } catch let error as UsageError {
            return error.message
        } catch {
            return "not a usage error: \(error)"
        }
    }

    static func parse(_ arguments: [String]) throws -> Invocation { try Invocation.parse(arguments, commands: Command.all) }

    /// Each command's table names each option and each one-letter form once.
    @Test(arguments: Command.all.map(\.name))
    func namesAndLettersAreUnique(command: String) throws {
        let table = try #require(Command.all.first { $0.name == command }).table
        #expect(Set(table.map(\.name)).count == table.count, "\(table.map(\.name))")
        let letters = table.compactMap(\.short)
        #expect(Set(letters).count == letters.count, "\(letters)")
    }

    /// `COMMAND --help` shows every option of the table once, under its heading: the help is
    /// the table (an option left out of it, or a heading skipped, fails this).
    @Test(arguments: Command.all.map(\.name))
    func helpListsEveryOptionOfTheTable(command: String) throws {
        let entry = try #require(Command.all.first { $0.name == command })
        let lines = entry.help.split(separator: "\n")
        let listed = lines.filter { $0.hasPrefix("  --") }.map { String($0.dropFirst(2).prefix { $0 != " " }) }
        #expect(listed == HelpHeading.allCases.flatMap { heading in entry.table.filter { $0.heading == heading }.map { "--\($0.name)" } })
        #expect(listed.count == entry.table.count)
        for spec in entry.table {
            let line = try #require(lines.first { $0.hasPrefix("  \(spec.usage) ") }, "\(spec.usage)")
            #expect(line.contains(spec.help))
            if let letter = spec.short { #expect(line.contains("(-\(letter))"), "\(line)") }
            let heading = try #require(lines.firstIndex(of: Substring("\(spec.heading.rawValue):")))
            let position = try #require(lines.firstIndex(of: line))
            #expect(heading < position && !lines[heading..<position].dropFirst().contains { !$0.hasPrefix("  ") }, "\(spec.name) under \(spec.heading)")
        }
    }

    /// A mistyped option (two letters swapped) gets its name back, for every option of every table.
    @Test(arguments: Command.all.map(\.name))
    func unknownOptionsGetDidYouMean(command: String) throws {
        let entry = try #require(Command.all.first { $0.name == command })
        for spec in entry.table where spec.name.count >= 5 {
            var letters = Array(spec.name)
            letters.swapAt(1, 2)
            let typo = String(letters)
            guard !entry.table.contains(where: { $0.name == typo }) else { continue }
            let message = try #require(Self.usageError([command, "--\(typo)"]))
            #expect(message == "unknown option '--\(typo)' for '\(command)' (did you mean '--\(spec.name)'? see 'imgpipe \(command) --help')")
        }
        #expect(Self.usageError([command, "--zzzzzzzz"]) == "unknown option '--zzzzzzzz' for '\(command)' (see 'imgpipe \(command) --help')")
    }

    /// Every option that takes a value says so when the value is missing, by its value name;
    /// a flag refuses one.
    @Test(arguments: Command.all.map(\.name))
    func missingValuesAndFlagsWithValues(command: String) throws {
        let entry = try #require(Command.all.first { $0.name == command })
        for spec in entry.table {
            if let valueName = spec.valueName {
                #expect(Self.usageError([command, "--\(spec.name)"]) == "'--\(spec.name)' needs a value \(valueName)")
                if let letter = spec.short {
                    #expect(Self.usageError([command, "-\(letter)"]) == "'--\(spec.name)' needs a value \(valueName)")
                }
            } else if spec.name != "help" {
                #expect(Self.usageError([command, "--\(spec.name)=1"]) == "'--\(spec.name)' takes no value")
            }
        }
    }

    /// A value of the wrong type is a usage error at parse time, before the command runs,
    /// naming the option as the command line had it.
    @Test(arguments: [
        (["fetch", "a", "--concurrency", "many"], "--concurrency needs a positive whole number, got 'many'"),
        (["fetch", "a", "--timeout", "-1"], "--timeout needs a positive number of seconds, got '-1'"),
        (["thumb", "a", "--quality", "high"], "--quality needs a whole number from 0 to 100, got 'high'"),
        (["thumb", "a", "-s", "0"], "--size needs N, WxH, Wx or xH in pixels, got '0'"),
        (["thumb", "a", "--fill=3y4"], "--fill needs WIDTHxHEIGHT in pixels, got '3y4'"),
        (["thumb", "a", "--filter", "cubic"], "--filter must be one of"),
        (["thumb", "a", "--format", "bmp"], "--format must be one of jpg, jpeg, png, webp, avif, heic, gif, jxl, pam, got 'bmp'"),
        (["frames", "a", "--format", "GIF"], "--format must be pam or png, got 'gif'"),
        (["sheet", "--columns", "0"], "--columns needs a positive whole number, got '0'"),
        (["demo", "sheet", "--origin", "ftp://x"], "--origin needs an http(s) URL, got 'ftp://x'"),
    ] as [([String], String)])
    func badValuesAreUsageErrorsAtParseTime(arguments: [String], message: String) {
        let error = Self.usageError(arguments)
        #expect(error?.hasPrefix(message) == true, "\(error ?? "parsed")")
    }

    /// Given twice, an option's last value wins; a repeatable one keeps every value in order.
    @Test func repeatedOptions() throws {
        let thumb = ThumbOptions(), common = CommonOptions.declared
        let invocation = try Self.parse(["thumb", "a.png", "--size", "10", "-s20x", "--allow-host", "a.example", "--allow-host=*.b.example",
                                         "--verbose", "--verbose"])
        #expect(invocation[thumb.geometry.size] == BoxSize(width: 20, height: nil))
        #expect(invocation.all(common.allowHost) == ["a.example", "*.b.example"])
        #expect(invocation[common.allowHost] == "*.b.example")
        #expect(invocation[common.verbose] && !invocation[common.noDiskCache])
        #expect(invocation[thumb.geometry.fill] == nil && !invocation.has(thumb.geometry.fill))
    }

    /// `--out FILE`, `--out=FILE`, `-o FILE`, `-oFILE` and `convert`'s OUT are one option,
    /// declared once and read by one function (`Invocation.output`).
    @Test func outAndItsLetterAreOneOption() throws {
        for arguments in [["convert", "a.png", "--out", "x.png"], ["convert", "a.png", "--out=x.png"], ["convert", "a.png", "-o", "x.png"],
                          ["convert", "a.png", "-ox.png"]] {
            #expect(try Self.parse(arguments).output(ConvertOptions().out) == "x.png", "\(arguments)")
        }
        for command in Command.all {
            guard let out = command.table.first(where: { $0.name == "out" }) else { continue }
            #expect(out.short == "o" && out.valueName == "FILE" && out.heading == .output, "\(command.name)")
        }
        #expect(Self.usageError(["decode", "a.png", "--out="]) == nil)
        #expect(throws: UsageError.self) { try Self.parse(["decode", "a.png", "--out="]).output(DecodeCommandOptions().out) }
        // In the source: `--out` is declared in one place, and no option is read by a string key.
        let sources = Imgpipe.root.appendingPathComponent("Sources/imgpipe")
        var declarations = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: sources.path) where name.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(name), encoding: .utf8)
            declarations += text.components(separatedBy: "Option(\"out\"").count - 1
            #expect(!text.contains("options[\""), "\(name) reads an option by its name")
        }
        #expect(declarations == 1)
    }

    /// `--help` wins over everything after the command but an unknown option: no value is checked.
    @Test func helpSkipsValidation() throws {
        #expect(try Self.parse(["thumb", "--size", "0", "-h"]).wantsHelp)
        #expect(try Self.parse(["convert", "a", "b", "c", "--help"]).wantsHelp)
    }
}
