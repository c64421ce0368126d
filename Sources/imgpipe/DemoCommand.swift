import ImagePipelineKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Command {
    /// `imgpipe demo STEP... --origin URL --state DIR [--out FILE.png]`
    static let demo = Command(
        name: "demo", synopsis: "STEP... --origin URL --state DIR [--out FILE.png]",
        summary: "run steps of ./scripts/demo against a CDN (scripts/cdn-fixture.py): "
            + DemoStep.allCases.map(\.rawValue).joined(separator: ", "),
        positionals: .count(1...DemoStep.allCases.count), options: DemoOptions(),
        run: { options, invocation in
            let steps = try invocation.positionals.map { name in
                guard let step = DemoStep(rawValue: name) else {
                    throw UsageError(message: "unknown demo step '\(name)' (steps: "
                                     + DemoStep.allCases.map(\.rawValue).joined(separator: ", ") + ")")
                }
                return step
            }
            guard let state = invocation[options.state] else { throw UsageError(message: "'imgpipe demo' needs --state DIR") }
            let out = steps.contains(.sheet) ? try invocation.output(options.out, allowed: ["png"]) : nil
            let origin = invocation[options.origin]
            guard steps.allSatisfy({ $0 == .sheet }) || origin != nil else {
                throw UsageError(message: "'imgpipe demo' needs --origin URL")
            }
            let demo = try Demo(state: URL(fileURLWithPath: state), origin: origin)
            for step in steps {
                if step == .sheet, let out {
                    try await demo.writeSheet(to: out)
                } else {
                    try await demo.run(step)
                }
            }
            return 0
        })
}

/// `demo`'s options.
struct DemoOptions: OptionGroup {
    let origin = Option("origin", "URL", .sources, "the CDN the grid comes from, e.g. http://127.0.0.1:8080 (its ?w=N sizes are asked for)",
                        ValueParser { text, option in
                            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                                throw UsageError(message: "\(option) needs an http(s) URL, got '\(text)'")
                            }
                            return url
                        })
    let state = Option("state", "DIR", .sources, "kept from step to step and process to process: the disk cache (DIR/cache),"
                       + " the CDN's request counts (DIR/requests.json), each step's record and sheet", .text)
    let out = OutputOptions.out("with the sheet step: where to write the sheet (.png)")
}

/// The steps of the demo, in the order `./scripts/demo` runs them: each says what it shows
/// and what must be true of it (a step that breaks its promise fails the demo).
enum DemoStep: String, CaseIterable {
    /// The grid, cold: every picture downloaded once, at its width bucket.
    case network
    /// The grid again in the same process: the memory cache, no download.
    case memory
    /// Many callers asking for one new picture at once: one download between them.
    case coalesce
    /// The grid in a new process: the disk cache, no request to the origin.
    case disk
    /// The grid in another process with the origin stopped: the disk cache still answers.
    case offline
    /// Round avatars (`.circle`) of the grid: processed, no download.
    case round
    /// No loading: prints nothing new, writes the sheet of every step so far.
    case sheet

    /// The sheet's line for the step.
    var title: String {
        switch self {
        case .network: "cold: from the CDN"
        case .memory: "again, same process"
        case .coalesce: "one picture, many callers at once"
        case .disk: "a new process"
        case .offline: "a new process, the CDN stopped"
        case .round: "round avatars (.circle)"
        case .sheet: "sheet"
        }
    }
}

/// One run of `imgpipe demo`: the standard pipeline over a disk cache in the state directory,
/// and the records of the steps before it (from earlier processes too).
struct Demo {
    /// Tiles of the grid, in pixels: the requests' size, so the fetch URLs ask for `?w=160`.
    static let tileSize = 160
    /// How many callers ask for the same picture at once in ``DemoStep/coalesce``, and how many
    /// of their answers its sheet shows (the same picture each time, at twice the tile size).
    static let callers = 20
    static let callersShown = 5

    let state: URL
    let origin: URL?
    let pipeline: ImagePipeline
    let stats = Stats()
    /// The bundled samples' names: the CDN serves `Samples/`.
    let names: [String]

    init(state: URL, origin: URL?) throws {
        self.state = state
        self.origin = origin
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        // What the README's app does, plus the width buckets and the events counted.
        var configuration = try ImagePipeline.Configuration.standard(diskCache: .directory(state.appendingPathComponent("cache")))
        configuration.urlBuilder = WidthBucketURLBuilder()
        configuration.eventHandler = stats.record
        pipeline = ImagePipeline(configuration: configuration)
        names = try Sources.bundledSamples().map(\.lastPathComponent)
    }

    private var recordsFile: URL { state.appendingPathComponent("steps.json") }

    func records() throws -> [DemoRecord] {
        guard FileManager.default.fileExists(atPath: recordsFile.path) else { return [] }
        return try JSONDecoder().decode([DemoRecord].self, from: Data(contentsOf: recordsFile))
    }

    /// Requests the CDN has seen so far (`scripts/cdn-fixture.py --counts`), or `nil` when it
    /// writes no counts.
    func originRequests() -> Int? {
        guard let data = try? Data(contentsOf: state.appendingPathComponent("requests.json")),
              let counts = try? JSONDecoder().decode(RequestCounts.self, from: data) else { return nil }
        return counts.total
    }

    /// The part of `requests.json` the demo reads.
    private struct RequestCounts: Decodable {
        var total: Int?
    }

    /// Runs a loading step: its requests all at once, then its record, its line of the table
    /// and its row of the sheet. Throws when the step breaks its promise.
    func run(_ step: DemoStep) async throws {
        guard let origin else { return }
        let urls = names.map { origin.appendingPathComponent($0) }
        let requests: [ImageRequest]
        var tileSize = Self.tileSize
        switch step {
        case .network, .memory, .disk, .offline:
            requests = urls.map { ImageRequest(url: $0, width: tileSize, height: tileSize) }
        case .round:
            requests = urls.map { ImageRequest(url: $0, width: tileSize, height: tileSize, processors: [.circle]) }
        case .coalesce:
            // A size the grid did not ask for (?w=320), so this picture is downloaded here.
            tileSize = 2 * Self.tileSize
            requests = Array(repeating: ImageRequest(url: urls[urls.count / 2], width: tileSize, height: tileSize), count: Self.callers)
        case .sheet:
            return
        }
        let before = stats.snapshot, requestsBefore = originRequests()
        let start = Date()
        let results = await Loader.loadAll(requests, pipeline: pipeline, concurrency: requests.count)
        let seconds = Date().timeIntervalSince(start)
        await pipeline.waitForBackgroundWork()
        let downloads = stats.snapshot.downloads - before.downloads
        var records = try records()
        let originStopped = step == .offline || records.contains { $0.step == DemoStep.offline.rawValue }
        let seen = originStopped ? nil : requestsBefore.flatMap { old in originRequests().map { $0 - old } }

        var sources: [String: Int] = [:]
        var failures: [String] = []
        for (request, result) in zip(requests, results) {
            switch result {
            case .success(let (response, _)): sources["\(response.source)", default: 0] += 1
            case .failure(let error): failures.append(Sources.failure(error, for: request.url))
            }
        }
        var record = DemoRecord(step: step.rawValue, process: Int(getpid()), pictures: Set(requests.map(\.url)).count,
                                callers: requests.count, sources: sources, downloads: downloads, originRequests: seen,
                                originStopped: originStopped, milliseconds: seconds * 1000, sheet: "")
        let sheetFile = state.appendingPathComponent(printfFormat("step-%02d-", records.count + 1) + "\(step.rawValue).png")
        record.sheet = sheetFile.lastPathComponent
        try OutputFormat.write(Self.row(step, record, number: records.count + 1, tileSize: tileSize,
                                        results: step == .coalesce ? Array(results.prefix(Self.callersShown)) : results, names: names),
                               to: sheetFile.path)
        if records.isEmpty { print(DemoRecord.tableHeader) }
        records.append(record)
        try JSONEncoder().encode(records).write(to: recordsFile, options: .atomic)
        print(record.tableLine(process: DemoRecord.processNumber(of: record, in: records)))

        if let failure = failures.first {
            throw DemoFailure(step: step, message: "\(failures.count) of \(requests.count) failed; the first: \(failure)")
        }
        if let problem = record.brokenPromise(for: step) { throw DemoFailure(step: step, message: problem) }
    }

    /// The sheet of one step: its tiles, each captioned with where it came from and how long it took.
    private static func row(_ step: DemoStep, _ record: DemoRecord, number: Int, tileSize: Int,
                            results: [Result<(ImageResponse, Double), any Error>], names: [String]) -> Bitmap {
        let labels = step == .coalesce ? results.indices.map { "caller \($0 + 1) of \(record.callers)" } : names
        let tiles = zip(results, labels).map { result, label in
            var tile = ContactSheet.Tile(name: label, result: result.map(\.0))
            if case .success(let (response, seconds)) = result {
                let source = "\(response.source)"
                tile.caption = "\(source) \(Int((seconds * 1000).rounded())) ms"
                tile.captionColor = DemoRecord.color(for: source)
            }
            return tile
        }
        var layout = ContactSheet(tileSize: tileSize, columns: max(1, tiles.count))
        layout.title = "\(number) · \(step.rawValue): \(step.title) · \(record.summary)"
        return layout.render(tiles)
    }

    /// Prints where the sheet went, after stacking every step's sheet (read back through the pipeline).
    func writeSheet(to path: String) async throws {
        let records = try records()
        guard !records.isEmpty else {
            throw ImagePipelineError.fileUnreadable(path: recordsFile.path, reason: "no demo step has run yet")
        }
        var sheets: [Bitmap] = []
        for record in records {
            let url = state.appendingPathComponent(record.sheet)
            sheets.append(try await pipeline.image(for: ImageRequest(url: url)).bitmap)
        }
        let sheet = ContactSheet.stacked(sheets)
        try OutputFormat.write(sheet, to: path)
        print("wrote \(path) (\(sheet.width)×\(sheet.height), \(records.count) steps)")
    }
}

/// A demo step that did not do what it shows (exit status 1).
struct DemoFailure: Error, CustomStringConvertible {
    let step: DemoStep
    let message: String
    var description: String { "demo step '\(step.rawValue)': \(message)" }
}
