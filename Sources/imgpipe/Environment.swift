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

/// What every command builds from the shared options: the pipeline, its caches and the stats.
struct Environment {
    let pipeline: ImagePipeline
    let diskCache: DiskCache?
    let stats: Stats
    let concurrency: Int
    let verbose: Bool

    /// Builds the pipeline for `sources`. The disk cache is opened only when a source is
    /// `http(s)`: local files skip it, and a local-only run should not create or scan it.
    /// `memoryCacheMB` is the memory budget when `--memory-cache-mb` is not given; `previews`,
    /// the pipeline's preview policy (`thumb --previews-dir`).
    init(_ invocation: Invocation, sources: [URL], memoryCacheMB: Int = 256,
         previews: ImagePipeline.PreviewPolicy? = nil) throws {
        let options = CommonOptions.declared
        let memoryMB = invocation[options.memoryCacheMB] ?? memoryCacheMB
        let maxPixels = invocation[options.maxPixels] ?? CommonOptions.defaultMaxPixels
        let timeout = invocation[options.timeout] ?? 15
        concurrency = invocation[options.concurrency] ?? 8
        verbose = invocation[options.verbose]
        let remote = sources.contains { ["http", "https"].contains($0.scheme?.lowercased() ?? "") }
        var policy = invocation[options.publicOnly] ? ConnectionPolicy.publicOnly : .default
        let allowedHosts = invocation.all(options.allowHost)
        if !allowedHosts.isEmpty { policy.allowedHosts = allowedHosts.map { HostPattern($0) } }
        if invocation[options.noDiskCache] || !remote {
            diskCache = nil
        } else {
            let directory = invocation[options.cacheDirectory]
            do {
                if let directory {
                    diskCache = try DiskCache(directory: URL(fileURLWithPath: directory))
                } else {
                    diskCache = try DiskCache(name: "imgpipe")
                }
            } catch {
                throw ImagePipelineError.fileUnreadable(path: directory ?? "the user cache directory",
                                                        reason: "cannot use it as a disk cache: \(localizedDescription(of: error))")
            }
        }
        // Capped: `memoryMB << 20` would wrap to zero or below for a huge (valid) N. 2^62 bytes,
        // not Int.max, so MemoryCache's Int(Double(costLimit) × fraction) stays representable.
        let memoryBytes = memoryMB > (1 << 42) ? 1 << 62 : memoryMB << 20
        let stats = Stats()
        self.stats = stats
        let decoders = Self.decoders
        var configuration = ImagePipeline.Configuration(
            decoders: decoders,
            loaders: Self.loaders(remote: remote, concurrency: concurrency, timeout: timeout, accept: decoders.acceptHeader(), policy: policy),
            memoryCache: MemoryCache(costLimit: memoryBytes),
            diskCache: diskCache,
            maxPixelCount: maxPixels,
            negativeCacheLifetime: 0,
            eventHandler: stats.record)
        configuration.maxConcurrentDecodes = ProcessInfo.processInfo.activeProcessorCount
        configuration.previewPolicy = previews
        // `--fail-on` for every request of the run; `none`, as libvips, by default.
        configuration.decodingStrictness = invocation[options.failOn] ?? .lenient
        pipeline = ImagePipeline(configuration: configuration)
    }

    /// The formats imgpipe reads, what a folder given as SOURCE is sifted by too: the kit's
    /// decoders (``ImagePipelineKit/CodecStandardError``: with the C libraries' own stderr
    /// writes discarded, see ``Console``), SVG parsed and drawn in a worker process, imgpipe
    /// itself started with its hidden `__svg-worker` command (`SVGWorker`): `info`, `thumb`,
    /// `--overlay` and `serve` alike.
    static let decoders = DecoderRegistry.standard(
        codecStandardError: .discardedWhileDecoding,
        svg: SVGDecoder(isolation: SVGWorker.currentExecutable(arguments: [SVGWorker.imgpipeCommand]).map { .worker($0) } ?? .inProcess))

    /// The file loader (mapping inputs of 1 MiB or more: they are the user's own files), and
    /// libcurl only when a source needs it, so a local run does not pay for its start-up.
    private static func loaders(remote: Bool, concurrency: Int, timeout: Double, accept: String, policy: ConnectionPolicy) -> LoaderRegistry {
        var registry = LoaderRegistry().registering(FileDataLoader(maxBodyBytes: 1 << 30, memoryMapThreshold: 1 << 20))
        if remote {
            // `accept` names what the registered decoders read (WebP, HEIC, AVIF when libheif
            // has an AV1 decoder…), so a negotiating server may send it.
            registry.register(HTTPDataLoader(configuration: HTTPDataLoader.Configuration(
                maxConnectionsPerHost: min(concurrency, 6), connectTimeout: timeout, idleTimeout: timeout,
                headers: ["Accept": accept], connectionPolicy: policy)))
        }
        return registry
    }

    /// Waits for background work (revalidations, cache eviction) so nothing is cut off at exit.
    func finish() async {
        await pipeline.waitForBackgroundWork()
        await diskCache?.waitForMaintenance()
    }
}

/// Turns command-line SOURCE arguments into URLs; `-` reads more sources from stdin.
enum Sources {
    static func urls(_ arguments: [String]) throws -> [URL] {
        var result: [URL] = []
        for argument in arguments {
            if argument == "-" {
                while let line = readLine() {
                    let trimmed = line.trimmingSpacesAndTabs()
                    if !trimmed.isEmpty && !trimmed.hasPrefix("#") { result.append(try url(trimmed)) }
                }
            } else if isFolder(argument) {
                result += try pictures(inFolder: argument)
            } else {
                result.append(try url(argument))
            }
        }
        return result
    }

    /// Whether `source` is a local folder (not a URL).
    private static func isFolder(_ source: String) -> Bool {
        !source.contains("://") && folderStatus(source) == true
    }

    /// The picture files of `folder`, by name (not its subfolders, not hidden files): those whose
    /// first bytes a decoder of imgpipe's knows. The others are skipped with one note on stderr
    /// naming the folder and the first of them.
    static func pictures(inFolder folder: String) throws -> [URL] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw ImagePipelineError.fileUnreadable(path: folder, reason: "cannot list the folder: \(Console.oneLine(localizedDescription(of: error)))")
        }
        var pictures: [URL] = [], skipped: [String] = [], special: [String] = []
        for name in names {
            let url = URL(fileURLWithPath: folder).appendingPathComponent(name)
            let kind = fileKind(url.path)
            guard kind == S_IFREG else {
                // Links, FIFOs, sockets and devices are never opened (a FIFO would block the
                // batch), but named; subfolders are not sources.
                if kind != S_IFDIR { special.append(name) }
                continue
            }
            let head = readPrefix(of: url.path, upTo: ImageFormat.sniffLength).map { Data($0) }
            if let head, Environment.decoders.format(of: head) != nil { pictures.append(url) } else { skipped.append(name) }
        }
        if !skipped.isEmpty {
            let shown = skipped.prefix(3).map { MessageText.escaped($0, limit: 80) }.joined(separator: ", ")
            printError("imgpipe: note: \(MessageText.escaped(folder, limit: 200)): skipped \(skipped.count) file(s) that are not pictures "
                       + "(\(shown)\(skipped.count > 3 ? ", …" : ""))")
        }
        if !special.isEmpty {
            let shown = special.prefix(3).map { MessageText.escaped($0, limit: 80) }.joined(separator: ", ")
            printError("imgpipe: note: \(MessageText.escaped(folder, limit: 200)): skipped \(special.count) entr\(special.count == 1 ? "y" : "ies") "
                       + "that are not regular files: links, FIFOs, sockets or devices (\(shown)\(special.count > 3 ? ", …" : ""))")
        }
        return pictures
    }

    static func url(_ source: String) throws -> URL {
        let lower = source.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") || lower.hasPrefix("file://") {
            guard let url = URL(string: source), url.host != nil || url.isFileURL else {
                throw UsageError(message: "not a valid URL: '\(source)'")
            }
            return url
        }
        if let colon = source.firstIndex(of: ":"), source[..<colon].allSatisfy({ $0.isLetter }), source.contains("://") {
            throw ImagePipelineError.noLoader(scheme: String(source[..<colon]))
        }
        return URL(fileURLWithPath: source)
    }

    /// How a source is shown in a line of text: the path for files, the URL otherwise,
    /// shortened and escaped (``PipelineCore/MessageText/url(_:limit:)``): a list of sources
    /// may come from anywhere (`-` reads it from stdin).
    static func label(_ url: URL) -> String { MessageText.url(url) }

    /// A source in full, for `--json` (whose encoder escapes what must be; ``Console/json(_:)``).
    static func name(_ url: URL) -> String { url.isFileURL ? url.path : url.absoluteString }

    /// The bundled sample pictures: `Samples/` of this checkout (found from the source file's
    /// location), else `./Samples`.
    static func bundledSamples() throws -> [URL] {
        let candidates = [
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples").standardizedFileURL,
            URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Samples"),
        ]
        for directory in candidates {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !names.isEmpty {
                return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
            }
        }
        throw ImagePipelineError.fileUnreadable(path: "Samples/", reason: "the bundled samples are not there; give SOURCEs")
    }
}

extension Sources {
    /// The message for `error` loading `url`: the error alone when it names its URL already,
    /// else prefixed with the source's label.
    static func failure(_ error: any Error, for url: URL) -> String {
        if let own = error as? ImagePipelineError, own.url != nil { return Console.oneLine("\(own)") }
        return "\(label(url)): \(Console.oneLine("\(error)"))"
    }
}

/// Writes a message on stderr (``Console/standardError``), each of its lines through
/// ``Console/safeLines(_:)``.
func printError(_ message: String) {
    Console.standardError.write(Data((Console.safeLines(message) + "\n").utf8))
}

/// imgpipe's own stderr.
///
/// The contract is one `imgpipe: <message>` line per failure, and no C library's own output.
/// libde265 prints some diagnostics with `fprintf(stderr, …)` and has no switch for them, so
/// the kit's decoders are made with ``ImagePipelineKit/CodecStandardError/discardedWhileDecoding``:
/// fd 2 points at `/dev/null` while a HEIF decode runs. libjxl 0.7 prints a trace of every
/// failure the same way, and the same setting silences the JPEG XL decoder too (both share one
/// silencer). imgpipe's own messages (and the
/// progress bar) go to this duplicate of fd 2, made in `main` before anything decodes, so they
/// are never lost to that window.
enum Console {
    /// A duplicate of fd 2 made at first use (`main` uses it first), or fd 2 itself if `dup` fails.
    static let standardError: FileOutput = {
        let duplicate = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
        return duplicate >= 0 ? FileOutput(fileDescriptor: duplicate, closeOnDealloc: true) : FileOutput(fileDescriptor: STDERR_FILENO, closeOnDealloc: false)
    }()

    /// Whether stderr is a terminal (asked of the duplicate: fd 2 may point at `/dev/null` mid-decode).
    static var standardErrorIsTerminal: Bool { isatty(standardError.fileDescriptor) != 0 }

    /// `message` on one line: line breaks inside a library's message become spaces.
    static func oneLine(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline).map { $0.trimmingSpacesAndTabs() }
            .filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// The most characters of one line imgpipe writes on stderr: room for a source's URL
    /// (``PipelineCore/MessageText/urlLimit``) and an error's text (1,000 characters at most for
    /// a wrapped error) with the words around them.
    static let lineLimit = 2_000

    /// Every line of `message` escaped and bounded (``PipelineCore/MessageText/escaped(_:limit:)``):
    /// the last guard, so that no text from outside (a server's header, a file's name or
    /// contents, a library's message) reaches the terminal with a control character in it,
    /// whichever message carries it. Escaping twice changes nothing, so the parts already
    /// escaped read the same.
    static func safeLines(_ message: String) -> String {
        message.split(separator: "\n", omittingEmptySubsequences: false)
            .map { MessageText.escaped($0, limit: lineLimit) }.joined(separator: "\n")
    }

    /// `object` as pretty-printed JSON with sorted keys. `jsonText` (JSONSerialization's bytes) escapes C0 controls
    /// (`\u001b`) but leaves DEL, the C1 controls (U+009B starts a terminal sequence too) and
    /// the bidirectional overrides as they are; those are written as `\uXXXX` escapes, which
    /// decode to the same string. They can only be inside strings (the rest is ASCII).
    static func json(_ object: Any) throws -> String {
        var text = String.UnicodeScalarView()
        for scalar in try jsonText(object, prettyPrinted: true, escapingSlashes: false).unicodeScalars {
            guard MessageText.needsEscaping(scalar), !scalar.isASCII || scalar.value == 0x7F else {
                text.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 { text.append(contentsOf: printfFormat("\\u%04x", unit).unicodeScalars) }
        }
        return String(text)
    }
}
