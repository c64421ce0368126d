// ImageFuzz: the fuzz loop of FuzzTests for as long as asked, in a process of its own (run by
// scripts/fuzz, which restarts it after a crash or a hang). Before each case it writes the
// input to OUT/current.EXT and its name to OUT/current.txt, so a crash leaves the input behind;
// inputs that fail a check are saved as OUT/<kind>-<format>-<index>.EXT with a .txt beside.
//
//   ImageFuzz [--seconds S] [--cases N] [--from I] [--run-seed X] [--formats jpeg,png,…]
//             [--out DIR] [--deadline S] [--memory-limit-mb M] [--pixel-limit P] [--max-seed-bytes B]
//   ImageFuzz --case FORMAT:CORPUS/FILE:0xSEED [--save FILE]   make one case again and run it
//   ImageFuzz --replay FILE…                                    run saved inputs
//   --crash-at I: abort() before case I (to check that scripts/fuzz keeps a crash's input)
//
// Exit status: 0 when the run ended (failures or not: see OUT), 3 after a hang (the stuck
// decode cannot be stopped, so the process ends), 2 on a usage error.
import Foundation
import FuzzSupport

struct Options {
    var seconds = 60.0
    var cases = Int.max
    var from = 0
    var runSeed: UInt64 = 1
    var formats = FuzzCorpus.formats
    var out = URL(fileURLWithPath: "fuzz-failures")
    var settings = FuzzHarness.Settings(pixelLimit: 100_000_000, deadline: 10, memoryLimit: 1 << 30, resetsPeak: true)
    var reproduce: String?
    var save: String?
    var replay: [String] = []
    var crashAt: Int?
    var maxSeedBytes = Int.max
}

func usage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ImageFuzz: \(message)\n".utf8))
    exit(2)
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments[...]
    func value(_ flag: String) -> String {
        guard let v = rest.popFirst() else { usage("\(flag) needs a value") }
        return v
    }
    func number<T: LosslessStringConvertible>(_ flag: String) -> T {
        let text = value(flag)
        guard let n = T(text) else { usage("\(flag): not a number: \(text)") }
        return n
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "--seconds": options.seconds = number(argument)
        case "--cases": options.cases = number(argument)
        case "--from": options.from = number(argument)
        case "--run-seed": options.runSeed = number(argument)
        case "--out": options.out = URL(fileURLWithPath: value(argument))
        case "--deadline": options.settings.deadline = number(argument)
        case "--memory-limit-mb": options.settings.memoryLimit = (number(argument) as Int) << 20
        case "--pixel-limit": options.settings.pixelLimit = number(argument)
        case "--case": options.reproduce = value(argument)
        case "--save": options.save = value(argument)
        case "--crash-at": options.crashAt = number(argument)
        case "--max-seed-bytes": options.maxSeedBytes = number(argument)
        case "--replay":
            options.replay = Array(rest)
            rest = []
        case "--formats":
            options.formats = value(argument).split(separator: ",").map { name in
                guard let format = FuzzFormat(rawValue: String(name)) else { usage("unknown format \(name)") }
                return format
            }
        case "--help", "-h":
            print("ImageFuzz [--seconds S] [--cases N] [--from I] [--run-seed X] [--formats jpeg,png,webp,heif,avif] [--out DIR]")
            print("          [--deadline S] [--memory-limit-mb M] [--pixel-limit P] [--max-seed-bytes B]")
            print("ImageFuzz --case FORMAT:CORPUS/FILE:0xSEED [--save FILE]")
            print("ImageFuzz --replay FILE...")
            exit(0)
        default: usage("unknown argument \(argument)")
        }
    }
    return options
}

func describe(_ report: FuzzReport) -> String {
    var lines = ["thumbnail: \(report.thumbnail)", "original: \(report.original)",
                 String(format: "%.3f s, peak %d MiB, resident %d MiB", report.seconds, (report.peakBytes ?? 0) >> 20,
                        (report.residentBytes ?? 0) >> 20)]
    lines += report.problems.map { "PROBLEM: \($0)" }
    return lines.joined(separator: "\n")
}

func write(_ text: String, to url: URL) {
    try? Data((text + "\n").utf8).write(to: url)
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
let harness = FuzzHarness(settings: options.settings)

if let spec = options.reproduce {
    guard let c = FuzzCorpus.reproduce(spec) else { usage("cannot make case \(spec) (is the corpus at \(FuzzCorpus.root.path)?)") }
    if let save = options.save { try? Data(c.bytes).write(to: URL(fileURLWithPath: save)) }
    let report = await harness.run(c.bytes, variant: c.mutationSeed)
    print(c.name)
    print(describe(report))
    exit(report.hung ? 3 : report.problems.isEmpty ? 0 : 1)
}

if !options.replay.isEmpty {
    var failed = false
    for path in options.replay {
        guard let data = FileManager.default.contents(atPath: path) else { usage("cannot read \(path)") }
        let report = await harness.run([UInt8](data), variant: 0)
        print("\(path)\n\(describe(report))")
        if report.hung { exit(3) }
        failed = failed || !report.problems.isEmpty
    }
    exit(failed ? 1 : 0)
}

guard FuzzCorpus.isPresent else { usage("no corpus at \(FuzzCorpus.root.path)") }
try? FileManager.default.createDirectory(at: options.out, withIntermediateDirectories: true)
let seeds = Dictionary(uniqueKeysWithValues: options.formats.map { ($0, FuzzCorpus.seeds($0, maxBytes: options.maxSeedBytes)) }).filter { !$0.value.isEmpty }
let formats = options.formats.filter { seeds[$0] != nil }
guard !formats.isEmpty else { usage("no corpus files for \(options.formats)") }

// The largest peak seen by any run into this folder, so the saved input stays the record.
let recordFile = options.out.appendingPathComponent("largest-peak.txt")
var recordPeak = (try? String(contentsOf: recordFile, encoding: .utf8)).flatMap { $0.split(separator: "\n").first }.flatMap { Int($0) } ?? 0

var stats = (cases: 0, decoded: 0, failed: 0, problems: 0, hangs: 0, maxPeak: 0, maxPeakCase: "", maxSeconds: 0.0, slowest: "")
let started = Date()
var index = options.from

@MainActor func summary() -> String {
    "STATS from=\(options.from) next=\(index) cases=\(stats.cases) decodes=\(stats.decoded) errors=\(stats.failed) "
        + "failing=\(stats.problems) hangs=\(stats.hangs) maxPeakBytes=\(stats.maxPeak) "
        + String(format: "seconds=%.1f slowestCase=%.3f", Date().timeIntervalSince(started), stats.maxSeconds)
        + " residentBytes=\(FuzzHarness.residentBytes() ?? 0) maxPeakCase=\(stats.maxPeakCase) slowest=\(stats.slowest)"
}

@MainActor func finish(_ status: Int32) -> Never {
    let line = summary()
    print(line)
    if let handle = try? FileHandle(forWritingTo: options.out.appendingPathComponent("stats.log")) {
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        try? handle.close()
    } else {
        write(line, to: options.out.appendingPathComponent("stats.log"))
    }
    exit(status)
}

while stats.cases < options.cases, Date().timeIntervalSince(started) < options.seconds {
    let format = formats[index % formats.count]
    let c = FuzzCase(format: format, index: UInt64(index / formats.count), runSeed: options.runSeed, seeds: seeds[format] ?? [])
    let ext = format.fileExtension
    let current = options.out.appendingPathComponent("current.\(ext)")
    for other in FuzzFormat.allCases where other.fileExtension != ext {
        try? FileManager.default.removeItem(at: options.out.appendingPathComponent("current.\(other.fileExtension)"))
    }
    try? Data(c.bytes).write(to: current)
    write("index \(index) run-seed \(options.runSeed)\n\(c.name)\nImageFuzz --case \(c.reproduction)\ninput current.\(ext)",
          to: options.out.appendingPathComponent("current.txt"))

    if index == options.crashAt { abort() }  // to check that scripts/fuzz keeps a crash's input
    let report = await harness.run(c.bytes, variant: c.mutationSeed)
    stats.cases += 1
    for outcome in [report.thumbnail, report.original] {
        if case .decoded = outcome { stats.decoded += 1 }
        if case .failed = outcome { stats.failed += 1 }
    }
    if report.seconds > stats.maxSeconds { (stats.maxSeconds, stats.slowest) = (report.seconds, c.reproduction) }
    if let peak = report.peakBytes, peak > stats.maxPeak {
        (stats.maxPeak, stats.maxPeakCase) = (peak, c.reproduction)
        if peak > recordPeak {
            recordPeak = peak
            try? Data(c.bytes).write(to: options.out.appendingPathComponent("largest-peak.input"))
            write("\(peak)\nindex \(index) run-seed \(options.runSeed)\n\(c.name)\nImageFuzz --case \(c.reproduction)\n\(describe(report))",
                  to: recordFile)
        }
    }
    if !report.problems.isEmpty {
        stats.problems += 1
        let kind = report.hung ? "hang" : report.problems.contains { $0.contains("memory") } ? "memory" : "check"
        let base = options.out.appendingPathComponent("\(kind)-\(format.rawValue)-\(index)")
        try? Data(c.bytes).write(to: base.appendingPathExtension(ext))
        write("index \(index) run-seed \(options.runSeed)\n\(c.name)\nImageFuzz --case \(c.reproduction)\n\(describe(report))",
              to: base.appendingPathExtension("txt"))
        print("\(kind.uppercased()) \(base.path).\(ext): \(c.name)\n\(describe(report))")
    }
    index += 1
    if report.hung {
        stats.hangs += 1
        finish(3)
    }
}
try? FileManager.default.removeItem(at: options.out.appendingPathComponent("current.txt"))
for format in FuzzFormat.allCases {
    try? FileManager.default.removeItem(at: options.out.appendingPathComponent("current.\(format.fileExtension)"))
}
finish(0)
