import Foundation
import PipelineCore

/// `imgpipe thumb SOURCE... --out-dir DIR [--format EXT]`: many thumbnails in one process.
///
/// One pipeline decodes and resamples on its pool (a thread per core); each result is encoded
/// and written on imgpipe's own pool (a thread per core, never the cooperative pool or an
/// actor), so encoding one picture overlaps decoding the next. At most `--concurrency`
/// pictures are in flight (default: twice the cores, at least 8), which keeps both pools busy
/// while file reads wait, and bounds memory by that many source files and thumbnails. A source
/// that fails is reported (one line naming it) and the others are still written; the exit
/// status is 1 when any failed.
///
/// Output names are `DIR/<file stem>.<ext>`, in the order of the sources. A stem already taken
/// by an earlier source (compared ignoring case, as macOS's file systems do) gets the first free
/// `-2`, `-3`, … suffix, with a warning naming both sources: two sources never write one file.
enum ThumbnailBatch {
    /// The memory cache budget in MiB when `--memory-cache-mb` is not given: each thumbnail is
    /// written once, so a large cache would only hold finished work (a repeated source still hits).
    static let memoryCacheMB = 32

    static func run(_ invocation: Invocation, request: @escaping @Sendable (URL) -> ImageRequest) async throws -> Int32 {
        guard let directory = invocation.options["out-dir"], !directory.isEmpty else {
            throw UsageError(message: "'imgpipe thumb' needs --out-dir DIR")
        }
        let formatName = invocation.options["format"] ?? "png"
        guard let format = OutputFormat(extension: formatName) else {
            throw UsageError(message: "--format must be one of \(OutputFormat.extensions.map(\.name).joined(separator: ", ")), got '\(formatName)'")
        }
        let settings = try OutputSettings(format: format, invocation: invocation,
                                          path: (directory as NSString).appendingPathComponent("*.\(format.fileExtension)"))
        let urls = try Sources.urls(invocation.positionals)
        guard !urls.isEmpty else { throw UsageError(message: "no sources given") }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw OutputError.cannotWrite(path: directory, reason: "cannot create the folder: \(Console.oneLine(error.localizedDescription))")
        }
        let (names, notes) = outputNames(for: urls, extension: format.fileExtension)
        for note in notes { printError("imgpipe: warning: \(note)") }
        let paths = names.map { (directory as NSString).appendingPathComponent($0) }

        let environment = try Environment(invocation, sources: urls, memoryCacheMB: memoryCacheMB)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let inFlight = invocation.options["concurrency"] != nil ? environment.concurrency : max(environment.concurrency, 2 * cores)
        // Idle threads wait a little for the next picture instead of exiting and being started again.
        let writers = WorkerPool(maxConcurrent: cores, name: "imgpipe.encode", idleTimeout: 0.5)
        let pipeline = environment.pipeline, verbose = environment.verbose
        let progress = ProgressBar(total: urls.count)
        let start = Date()

        var failed = 0
        await withTaskGroup(of: (Int, Result<ImageResponse, any Error>).self) { group in
            var next = 0
            func startNext() {
                guard next < urls.count else { return }
                let index = next, url = urls[index], path = paths[index]
                next += 1
                group.addTask {
                    do {
                        let response = try await pipeline.image(for: request(url))
                        let bitmap = response.bitmap
                        try await writers.run(priority: PriorityHandle(.visible)) { try settings.write(bitmap, to: path) }
                        return (index, .success(response))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            // At most one task per source: --concurrency is a bound, and may be huge.
            for _ in 0..<min(inFlight, urls.count) { startNext() }
            while let (index, result) = await group.next() {
                startNext()
                switch result {
                case .success(let response):
                    for warning in response.warnings {
                        progress.report("imgpipe: warning: \(Sources.label(urls[index])): \(MessageText.escaped(Console.oneLine(warning)))")
                    }
                    if verbose {
                        progress.report("\(Sources.label(urls[index])): \(response.format) \(response.originalSize) → "
                                        + "\(response.bitmap.size); wrote \(paths[index])")
                    }
                case .failure(let error):
                    failed += 1
                    progress.report("imgpipe: \(Sources.failure(error, for: urls[index]))")
                }
                progress.advance()
            }
        }
        progress.end()
        await environment.finish()
        let seconds = Date().timeIntervalSince(start)
        printError(String(format: "%d of %d thumbnails written to %@ in %.2f s (%.1f pictures/s)%@",
                          urls.count - failed, urls.count, directory as NSString, seconds,
                          Double(urls.count - failed) / max(seconds, 0.001),
                          (failed == 0 ? "" : ", \(failed) failed") as NSString))
        return failed == 0 ? 0 : 1
    }

    /// `<stem>.<ext>` for each source in order; a stem an earlier source took (ignoring case)
    /// gets the first free `-2`, `-3`, … suffix, and a note naming both sources.
    static func outputNames(for urls: [URL], extension ext: String) -> (names: [String], notes: [String]) {
        var taken: [String: URL] = [:]  // lower-cased name → the source that has it
        var names: [String] = [], notes: [String] = []
        for url in urls {
            let stem = self.stem(of: url)
            var name = "\(stem).\(ext)", suffix = 1
            while taken[name.lowercased()] != nil {
                suffix += 1
                name = "\(stem)-\(suffix).\(ext)"
            }
            if suffix > 1, let first = taken["\(stem).\(ext)".lowercased()] {
                notes.append("\(Sources.label(url)): \(stem).\(ext) is taken by \(Sources.label(first)); writing \(name)")
            }
            taken[name.lowercased()] = url
            names.append(name)
        }
        return (names, notes)
    }

    /// The source's file name without its extension; `picture` when the URL has no usable name
    /// (`http://host/`).
    static func stem(of url: URL) -> String {
        let stem = url.deletingPathExtension().lastPathComponent
        return stem.isEmpty || stem == "/" || stem == "." || stem == ".." ? "picture" : stem
    }
}
