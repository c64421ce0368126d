import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `imgpipe thumb SOURCE... --out-dir DIR [--format EXT]`, or `--out PATTERN` with `%s` (as
/// vipsthumbnail's `-o tn_%s.jpg`): many thumbnails in one process.
///
/// One pipeline decodes and resamples on its pool (a thread per core); each result is encoded
/// and written on imgpipe's own pool (a thread per core, never the cooperative pool or an
/// actor), so encoding one picture overlaps decoding the next. At most `--concurrency`
/// pictures are in flight (default: twice the cores, at least 8), which keeps both pools busy
/// while file reads wait, and bounds memory by that many source files and thumbnails. A source
/// that fails is reported (one line naming it) and the others are still written; the exit
/// status is 1 when any failed.
///
/// Output names are `DIR/<file stem>.<ext>`, in the order of the sources; with a pattern, `%s`
/// is the stem and the pattern's extension the format, and a pattern that names no folder puts
/// each thumbnail beside its local source (as vipsthumbnail does; a URL's in the current
/// folder). A name already taken in its folder by an earlier source (compared ignoring case, as
/// macOS's file systems do) gets the first free `-2`, `-3`, … suffix on the stem, with a
/// warning naming both sources: two sources never write one file.
enum ThumbnailBatch {
    /// The memory cache budget in MiB when `--memory-cache-mb` is not given: each thumbnail is
    /// written once, so a large cache would only hold finished work (a repeated source still hits).
    static let memoryCacheMB = 32

    /// `pattern` is `--out` when it holds `%s`.
    static func run(_ invocation: Invocation, _ options: ThumbOptions, pattern: String?, padsOrFlattens: Bool,
                    request: @escaping @Sendable (URL) -> ImageRequest) async throws -> Int32 {
        let settings: OutputSettings, folder: (URL) -> String, name: (String) -> String, destination: String
        if let pattern {
            settings = try OutputSettings(format: try OutputFormat(path: pattern), invocation: invocation, path: pattern,
                                          padsOrFlattens: padsOrFlattens)
            let besideSource = !pattern.contains("/")
            folder = { url in besideSource && url.isFileURL ? url.deletingLastPathComponent().path : "" }
            name = { stem in pattern.replacingOccurrences(ofASCII: "%s", with: stem) }
            destination = "as " + pattern
        } else {
            guard let directory = invocation[options.outDirectory], !directory.isEmpty else {
                throw UsageError(message: "'imgpipe thumb' needs --out-dir DIR")
            }
            let format = invocation[options.format] ?? .encoded(.png)
            settings = try OutputSettings(format: format, invocation: invocation,
                                          path: PathText.appending(directory, "*.\(format.fileExtension)"),
                                          padsOrFlattens: padsOrFlattens)
            folder = { _ in directory }
            name = { stem in "\(stem).\(format.fileExtension)" }
            destination = "to " + directory
        }
        let urls = try Sources.urls(invocation.positionals)
        guard !urls.isEmpty else { throw UsageError(message: "no sources given") }
        let (paths, notes) = outputPaths(for: urls, folder: folder, name: name)
        for note in notes { printError("imgpipe: warning: \(note)") }
        for directory in Set(paths.map { PathText.deletingLastComponent($0) }) where !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw OutputError.cannotWrite(path: directory, reason: "cannot create the folder: \(Console.oneLine(localizedDescription(of: error)))")
            }
        }

        let environment = try Environment(invocation, sources: urls, memoryCacheMB: memoryCacheMB)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let inFlight = invocation.has(CommonOptions.declared.concurrency) ? environment.concurrency : max(environment.concurrency, 2 * cores)
        // Idle threads wait a little for the next picture instead of exiting and being started again.
        let writers = WorkerPool(maxConcurrent: cores, name: "imgpipe.encode", idleTimeout: 0.5)
        let pipeline = environment.pipeline, verbose = environment.verbose, firstFrameOnly = invocation[options.encoding.firstFrame]
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
                        let wanted = settings.loading(request(url))
                        let response = try await pipeline.image(for: wanted)
                        let bitmap = response.bitmap, profile = response.iccProfile
                        let frames = try await AnimatedOutput.write(wanted, still: response, pipeline: pipeline, settings: settings,
                                                                    to: path, firstFrameOnly: firstFrameOnly)
                        if frames == nil {
                            try await writers.run(priority: PriorityHandle(.visible)) {
                                try settings.write(bitmap, iccProfile: profile, to: path)
                            }
                        }
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
                                        + "\(response.bitmap.size); wrote \(MessageText.escaped(paths[index], limit: 4_096))")
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
        printError(printfFormat("%d of %d thumbnails written ", urls.count - failed, urls.count) + destination
                   + printfFormat(" in %.2f s (%.1f pictures/s)", seconds, Double(urls.count - failed) / max(seconds, 0.001))
                   + (failed == 0 ? "" : ", \(failed) failed"))
        return failed == 0 ? 0 : 1
    }

    /// For each source in order, the path in its `folder` of the name `name` makes of its
    /// stem; a name an earlier source took in that folder (ignoring case) is made of the stem
    /// with the first free `-2`, `-3`, … suffix, and a note names both sources.
    static func outputPaths(for urls: [URL], folder: (URL) -> String, name: (String) -> String) -> (paths: [String], notes: [String]) {
        var taken: [String: URL] = [:]  // lower-cased path → the source that has it
        var paths: [String] = [], notes: [String] = []
        for url in urls {
            let stem = self.stem(of: url), directory = folder(url)
            let path = { (name: String) in PathText.appending(directory, name) }
            var chosen = name(stem), suffix = 1
            while taken[path(chosen).lowercased()] != nil {
                suffix += 1
                chosen = name("\(stem)-\(suffix)")
            }
            if suffix > 1, let first = taken[path(name(stem)).lowercased()] {
                notes.append("\(Sources.label(url)): \(name(stem)) is taken by \(Sources.label(first)); writing \(chosen)")
            }
            taken[path(chosen).lowercased()] = url
            paths.append(path(chosen))
        }
        return (paths, notes)
    }

    /// The source's file name without its extension, as one path component of the output
    /// folder: a `/` that percent-decoding made of `%2F`, and every character a message would
    /// escape (``PipelineCore/MessageText/needsEscaping(_:)``: control characters such as a
    /// newline from `%0A`, line separators, invisible format characters) become `_`; `picture`
    /// when nothing usable is left (`http://host/`, a name of dots only such as `%2E%2E`).
    static func stem(of url: URL) -> String {
        let name = url.deletingPathExtension().lastPathComponent
        guard name != "/" else { return "picture" }  // a URL without a path
        var safe = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            safe.append(scalar == "/" || MessageText.needsEscaping(scalar) ? "_" : scalar)
        }
        let stem = String(safe)
        return stem.allSatisfy { $0 == "." } ? "picture" : stem
    }
}
