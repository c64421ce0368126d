import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Command {
    /// `, ICC "Adobe RGB (1998)" (RGB)`, with why it is not applied when it is not; empty without a profile.
    static func profileText(_ profile: ColorProfileInfo?) -> String {
        guard let profile else { return "" }
        let name = profile.description.map { "\"\(MessageText.escaped($0))\"" } ?? "profile"
        let space = profile.colorSpace.isEmpty ? "" : " (\(MessageText.escaped(profile.colorSpace)))"
        return ", ICC \(name)\(space)" + (profile.problem.map { ", not applied: \(MessageText.escaped($0))" } ?? "")
    }

    /// `imgpipe info SOURCE... [--json] [--thumbhash] [--blurhash]`
    static let info = Command(
        name: "info", synopsis: "SOURCE... [--json] [--thumbhash] [--blurhash]",
        summary: "print format, pixel size, orientation, alpha, frame count and colour profile of each source (headers only; --thumbhash and --blurhash also decode)",
        positionals: .sources, options: InfoOptions(),
        run: { options, invocation in
            let urls = try Sources.urls(invocation.positionals)
            let environment = try Environment(invocation, sources: urls)
            let configuration = environment.pipeline.configuration
            var rows: [[String: Any]] = []
            var failed = 0
            for url in urls {
                do {
                    let loader = try configuration.loaders.requireLoader(for: url)
                    guard case .data(let data, _) = try await loader.load(DataLoadRequest(url: url)) else {
                        throw ImagePipelineError.unexpectedNotModified
                    }
                    let decoder = try configuration.decoders.requireDecoder(for: data)
                    let info = try decoder.readInfo(data)
                    // An animation's loop count and duration, from its header (no frame decoded):
                    // a header is described whatever its frame count, so no animation limits.
                    var animation: AnimationInfo?
                    if info.frameCount > 1, let animated = decoder as? any AnimatedImageDecoding {
                        let headerOnly = DecodeOptions(maxAnimationFrameCount: .max, maxAnimationPixelCount: .max)
                        animation = try animated.makeAnimationDecoder(for: data, options: headerOnly).animationInfo
                    }
                    var row: [String: Any] = [
                        "source": Sources.name(url), "format": info.format.rawValue,
                        "width": info.uprightSize.width, "height": info.uprightSize.height,
                        "storedWidth": info.size.width, "storedHeight": info.size.height,
                        "orientation": info.orientation.rawValue, "alpha": info.hasAlpha, "frames": info.frameCount,
                        "progressive": info.isProgressive, "bytes": data.count,
                    ]
                    if let profile = info.colorProfile {
                        var entry: [String: Any] = ["colorSpace": profile.colorSpace, "bytes": profile.byteCount]
                        if let description = profile.description { entry["description"] = description }
                        if let problem = profile.problem { entry["problem"] = problem }
                        row["profile"] = entry
                    }
                    if let animation {
                        row["loopCount"] = animation.loopCount ?? JSONNull()
                        row["durationMs"] = animation.totalDurationMilliseconds ?? JSONNull()
                    }
                    // The placeholder hash of the picture as the pipeline decodes it (upright,
                    // colour-managed, shrunk on load): the encoder reads at most 100 × 100 pixels.
                    // BlurHash reads the same small picture (one decode for both).
                    var thumbHash: ThumbHash?, blurHash: BlurHash?
                    if invocation[options.thumbhash] || invocation[options.blurhash] {
                        let side = ThumbHash.maxEncodedSide
                        let request = WriteRequest.make(url, target: .pixels(PixelSize(width: side, height: side)), contentMode: .fit)
                        let small = try await environment.pipeline.image(for: request).bitmap
                        if invocation[options.thumbhash] {
                            thumbHash = ThumbHash(bitmap: small)
                            row["thumbhash"] = thumbHash?.base64
                        }
                        if invocation[options.blurhash] {
                            blurHash = BlurHash(bitmap: small)
                            row["blurhash"] = blurHash?.string
                        }
                    }
                    rows.append(row)
                    if !invocation[options.json] {
                        print("\(Sources.label(url)): \(info.format) \(info.uprightSize)"
                              + (info.orientation == .up ? "" : " (stored \(info.size), orientation \(info.orientation.rawValue))")
                              + ", \(info.hasAlpha ? "alpha" : "no alpha"), \(info.frameCount) frame\(info.frameCount == 1 ? "" : "s")"
                              + (animation.map(Self.describe) ?? "")
                              + (info.isProgressive ? ", progressive" : "") + Self.profileText(info.colorProfile)
                              + ", \(Stats.bytes(data.count))" + (thumbHash.map { ", thumbhash \($0.base64)" } ?? "")
                              + (blurHash.map { ", blurhash \($0.string)" } ?? ""))
                    }
                } catch {
                    failed += 1
                    printError("imgpipe: \(Sources.failure(error, for: url))")
                }
            }
            if invocation[options.json] {
                print(try Console.json(rows))
            }
            return failed == 0 ? 0 : 1
        })

    /// ", loops forever, 1.2 s" for `info`'s line.
    private static func describe(_ animation: AnimationInfo) -> String {
        let loops = switch animation.loopCount {
        case nil: ", plays once"
        case 0?: ", loops forever"
        case let count?: ", loops \(count) time\(count == 1 ? "" : "s")"
        }
        let duration = animation.totalDurationMilliseconds.map { printfFormat(", %.2f s", Double($0) / 1000) } ?? ""
        return loops + duration
    }

    /// `imgpipe thumb SOURCE... (--size N | --fill WxH) (--out FILE | --out-dir DIR [--format EXT])`
    static let thumb = Command(
        name: "thumb", synopsis: "SOURCE... (--size N | --fill WxH) (--out FILE | --out-dir DIR [--format EXT])",
        summary: "write a thumbnail that fits inside N×N (or W×H), or a WxH picture cropped at the centre, a side, a focal point or by smart crop; many at once with --out-dir",
        positionals: .sources, options: ThumbOptions(),
        run: { options, invocation in
            let geometry = try ThumbnailGeometry(invocation, options.geometry)
            let composition = try ThumbnailComposition(invocation, options.composition, geometry: geometry)
            let steps = processors(invocation, options)
            let filter = invocation[options.filter] ?? .default
            let sharpening = invocation[options.sharpenReductions].map {
                ReductionSharpening(minimumReduction: $0, sigma: invocation[options.sharpen] ?? ReductionSharpening().sigma)
            }
            @Sendable func request(_ url: URL, _ processors: [ImageProcessor]) -> ImageRequest {
                var request = WriteRequest.make(url, geometry: geometry, processors: processors, filter: filter)
                composition.apply(to: &request)
                request.processing.sharpening = sharpening
                return request
            }
            let out = invocation[options.out]
            let pattern = out.flatMap { $0.contains("%s") ? $0 : nil }
            if invocation.has(options.outDirectory) || pattern != nil {
                guard out == nil || !invocation.has(options.outDirectory) else {
                    throw UsageError(message: "give --out FILE or --out-dir DIR, not both")
                }
                guard pattern == nil || !invocation.has(options.format) else {
                    throw UsageError(message: "--format goes with --out-dir; a --out pattern's extension picks the format")
                }
                guard !invocation.has(options.previewsDirectory) else { throw UsageError(message: "--previews-dir goes with --out FILE") }
                let processors = steps + (try await composition.processors(invocation))
                return try await ThumbnailBatch.run(invocation, options, pattern: pattern, padsOrFlattens: composition.usesBackground) { url in
                    request(url, processors)
                }
            }
            guard !invocation.has(options.format) || out == OutputSettings.standardOutput else {
                throw UsageError(message: "--format goes with --out-dir or --out -; with --out FILE the extension picks the format")
            }
            guard out != nil else { throw UsageError(message: "'imgpipe thumb' needs --out FILE or --out-dir DIR") }
            guard invocation.positionals.count == 1 else {
                throw UsageError(message: "--out FILE takes one SOURCE; for several use --out-dir DIR")
            }
            let output = try invocation.outputSettings(options.out, format: options.format, padsOrFlattens: composition.usesBackground)
            let urls = try Sources.urls(invocation.positionals)
            guard urls.count == 1, let url = urls.first else {
                throw UsageError(message: "--out FILE takes one SOURCE, got \(urls.count); for several use --out-dir DIR")
            }
            let processors = steps + (try await composition.processors(invocation))
            return try await render(request(url, processors), to: output, previewsTo: invocation[options.previewsDirectory], invocation)
        })

    /// `imgpipe decode SOURCE --out FILE`
    static let decode = Command(
        name: "decode", synopsis: "SOURCE --out FILE",
        summary: "decode SOURCE at full size, upright, and write it in the format of --out's extension",
        positionals: .count(1...1), options: DecodeCommandOptions(),
        run: { options, invocation in
            let output = try invocation.outputSettings(options.out)
            return try await render(WriteRequest.make(try Sources.url(invocation.positionals[0])), to: output, invocation)
        })

    /// `imgpipe convert SOURCE --out FILE`
    static let convert = Command(
        name: "convert", synopsis: "SOURCE (OUT | --out FILE)",
        summary: "write SOURCE in the format of the output's extension, at full size (no resampling), upright",
        positionals: .count(1...2), options: ConvertOptions(),
        run: { options, invocation in
            var invocation = invocation
            if invocation.positionals.count == 2 {
                guard !invocation.has(options.out) else { throw UsageError(message: "give OUT or --out FILE, not both") }
                invocation = invocation.setting(options.out, to: invocation.positionals[1], positionals: [invocation.positionals[0]])
            }
            let output = try invocation.outputSettings(options.out, format: options.format)
            return try await render(WriteRequest.make(try Sources.url(invocation.positionals[0])), to: output, invocation)
        })

    /// The built-in processors `thumb`'s `--blur`, `--sharpen`, the colour options
    /// (`--brightness`, `--contrast`, `--saturation`, `--hue`, `--gamma`: one ``ColorAdjustment``),
    /// `--corner-radius` and `--round` ask for, in that order (the server's: filters, then shape;
    /// blur then sharpen, as imgproxy's filters run). With `--sharpen-reductions`, `--sharpen` is
    /// the policy's sigma instead (the request's ``ReductionSharpening``, before every processor).
    private static func processors(_ invocation: Invocation, _ options: ThumbOptions) -> [ImageProcessor] {
        var list = [ImageProcessor]()
        if let blur = invocation[options.blur] { list.append(.gaussianBlur(radius: blur)) }
        if let sigma = invocation[options.sharpen], !invocation.has(options.sharpenReductions) { list.append(.sharpen(sigma: sigma)) }
        let adjustment = ColorAdjustment(brightness: invocation[options.brightness] ?? 1, contrast: invocation[options.contrast] ?? 1,
                                         saturation: invocation[options.saturation] ?? 1, hue: invocation[options.hue] ?? 0,
                                         gamma: invocation[options.gamma] ?? 1)
        if !adjustment.isIdentity { list.append(.colorAdjustment(adjustment)) }
        if let corner = invocation[options.cornerRadius] { list.append(.roundedCorners(radius: corner)) }
        if invocation[options.round] { list.append(.circle) }
        return list
    }

    /// Loads `request` and writes it to `output`: exit status 0, or 1 with one line on stderr.
    /// With `previewsFolder`, the pipeline decodes previews of a progressive download and each
    /// one the task delivers is written there as `preview-01.png`, … before the final.
    private static func render(_ request: ImageRequest, to output: (path: String, settings: OutputSettings),
                               previewsTo previewsFolder: String? = nil, _ invocation: Invocation) async throws -> Int32 {
        let environment = try Environment(invocation, sources: [request.url], previews: previewsFolder == nil ? nil : .default)
        let response: ImageResponse
        do {
            let task = environment.pipeline.imageTask(for: output.settings.loading(request))
            if let previewsFolder { try await writePreviews(of: task, to: previewsFolder, verbose: environment.verbose) }
            response = try await task.response
        } catch let error as OutputError {
            await environment.finish()
            throw error
        } catch {
            printError("imgpipe: \(Sources.failure(error, for: request.url))")
            await environment.finish()
            return 1
        }
        for warning in response.warnings {
            printError("imgpipe: warning: \(Sources.label(request.url)): \(MessageText.escaped(Console.oneLine(warning)))")
        }
        let frames = try await AnimatedOutput.write(output.settings.loading(request), still: response, pipeline: environment.pipeline,
                                                    settings: output.settings, to: output.path,
                                                    firstFrameOnly: invocation[EncodingOptions.declared.firstFrame])
        if frames == nil { try output.settings.write(response.bitmap, iccProfile: response.iccProfile, to: output.path) }
        if environment.verbose {
            let line = "\(Sources.label(request.url)): \(response.format) \(response.originalSize) → \(response.bitmap.size) "
                + "from \(response.source); wrote \(MessageText.escaped(output.path, limit: 4_096))"
            // With `--out -` stdout holds the picture and nothing else.
            if output.path == OutputSettings.standardOutput { printError(line) } else { print(line) }
        }
        await environment.finish()
        return 0
    }

    /// Writes each preview `task` delivers as `folder/preview-NN.png`, in order, until the task
    /// ends; the folder is made if missing.
    private static func writePreviews(of task: ImageTask, to folder: String, verbose: Bool) async throws {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw OutputError.cannotWrite(path: folder, reason: localizedDescription(of: error))
        }
        let png = try OutputSettings(format: .encoded(.png), path: folder)
        var count = 0
        for await preview in task.previews {
            count += 1
            let path = PathText.appending(folder, printfFormat("preview-%02d.png", count))
            try png.write(preview.bitmap, to: path)
            if verbose { print("preview \(count): \(preview.bitmap.size); wrote \(MessageText.escaped(path, limit: 4_096))") }
        }
    }

    /// `imgpipe fetch URL...`
    static let fetch = Command(
        name: "fetch", synopsis: "SOURCE...",
        summary: "load each source through the full pipeline (caches included) and say where it came from",
        positionals: .sources, options: FetchOptions(),
        run: { _, invocation in
            let urls = try Sources.urls(invocation.positionals)
            let environment = try Environment(invocation, sources: urls)
            let start = Date()
            let results = await Loader.loadAll(urls.map { ImageRequest(url: $0) }, environment: environment) { _, _ in }
            var failed = 0
            for (url, result) in zip(urls, results) {
                switch result {
                case .success(let (response, seconds)):
                    print("\(Sources.label(url))  \(response.source.rawValue)  " + printfFormat("%.1f ms", seconds * 1000)
                          + "  \(response.format) \(response.originalSize)")
                case .failure(let error):
                    failed += 1
                    printError("imgpipe: \(Sources.failure(error, for: url))")
                }
            }
            await environment.finish()
            printError(environment.stats.summary(total: urls.count, seconds: Date().timeIntervalSince(start)))
            return failed == 0 ? 0 : 1
        })
}

/// `info`'s options.
struct InfoOptions: OptionGroup {
    let json = Flag("json", .output, "print a JSON array instead of one line per source")
    let thumbhash = Flag("thumbhash", .output,
                         "also decode each source small (fit in \(ThumbHash.maxEncodedSide) px) and print its ThumbHash (base64)")
    let blurhash = Flag("blurhash", .output,
                        "also decode each source small (as --thumbhash) and print its BlurHash (4×3 components, as imgproxy and Wolt's encoders)")
}

/// `thumb`'s options: the size and crop, the processing around the resize, where and how it writes.
struct ThumbOptions: OptionGroup {
    let geometry = ThumbnailGeometry.Options()
    let composition = ThumbnailComposition.Options()
    let out = OutputOptions.out("where to write one thumbnail, or a pattern for many: tn_%s.jpg (%s: the source's name; "
                                + "beside each source unless it names a folder); the extension picks the format: \(OutputFormat.knownExtensionList)")
    let outDirectory = Option("out-dir", "DIR", .output, "write each SOURCE's thumbnail as DIR/<file stem>.<format> (created if missing)",
                              .text)
    let format = OutputOptions.format("with --out-dir (default png), or with --out - for stdout: \(OutputFormat.formatNames)")
    let blur = Option("blur", "R", .processing, "Gaussian blur, standard deviation R output pixels", .radius)
    let sharpen = Option("sharpen", "SIGMA", .processing,
                         "unsharp mask after the resize (and --blur), as vips sharpen: sigma SIGMA output pixels (0.5 suits screens), "
                             + "libvips's other defaults", .sharpenSigma)
    let sharpenReductions = Option("sharpen-reductions", "N", .processing,
                                   "sharpen only pictures the resize shrank N times or more (e.g. 2), right after the resize, "
                                       + "with --sharpen's sigma (default 0.5)", .reduction)
    let brightness = Option("brightness", "F", .processing,
                            "multiply R, G, B by F (Pillow's ImageEnhance.Brightness; 1 unchanged, 0 black); near ImageMagick's "
                                + "-modulate F*100, which scales HSL lightness", .colorFactor)
    let contrast = Option("contrast", "F", .processing,
                          "blend with the picture's mean grey by F (Pillow's ImageEnhance.Contrast; 1 unchanged, 0 flat grey); near "
                              + "ImageMagick's -brightness-contrast 0xC, C = 400/pi*atan(F)-100, which pivots on mid-grey", .colorFactor)
    let saturation = Option("saturation", "F", .processing,
                            "blend with each pixel's luma by F (Pillow's ImageEnhance.Color; 1 unchanged, 0 grey); near ImageMagick's "
                                + "-modulate 100,F*100, which scales HSL saturation", .colorFactor)
    let hue = Option("hue", "DEG", .processing, "rotate the HSL hue by DEG degrees: ImageMagick's -modulate 100,100,H with H = 100 + DEG/1.8 (DEG taken in 0-360)",
                     .degrees)
    let gamma = Option("gamma", "G", .processing, "255*(c/255)^(1/G) (1 unchanged, above 1 lighter): vips gamma --exponent G, "
                           + "ImageMagick's -gamma G", .gamma)
    let cornerRadius = Option("corner-radius", "R", .processing, "round the corners by R output pixels", .radius)
    let round = Flag("round", .processing, "crop to a circle (transparent outside)")
    let filter = Option("filter", "F", .processing, "resampling filter: lanczos3 or area (default \(ResamplingFilter.default.rawValue))",
                        .filter)
    let previewsDirectory = Option("previews-dir", "DIR", .output,
                                   "with --out: write each preview of a progressive download as DIR/preview-01.png, … before the final",
                                   .text)
    let encoding = EncodingOptions.declared
}

/// `decode`'s options.
struct DecodeCommandOptions: OptionGroup {
    let out = OutputOptions.out("where to write it: \(OutputFormat.knownExtensionList) (.pam: straight RGBA)")
    let encoding = EncodingOptions.declared
}

/// `convert`'s options.
struct ConvertOptions: OptionGroup {
    let out = OutputOptions.out("where to write it, or OUT after SOURCE: \(OutputFormat.knownExtensionList); - for stdout")
    let format = OutputOptions.format("with --out -: what to write to stdout: \(OutputFormat.formatNames)")
    let encoding = EncodingOptions.declared
}

/// `fetch` takes only the ``CommonOptions``.
struct FetchOptions: OptionGroup {}

/// Loads many requests with at most `--concurrency` at once.
enum Loader {
    static func loadAll(_ requests: [ImageRequest], environment: Environment,
                        onEach: @escaping @Sendable (Int, Result<(ImageResponse, Double), any Error>) -> Void)
        async -> [Result<(ImageResponse, Double), any Error>] {
        await loadAll(requests, pipeline: environment.pipeline, concurrency: environment.concurrency, onEach: onEach)
    }

    /// Loads `requests` through `pipeline`, at most `concurrency` at once; each result with its
    /// time in seconds, in the order of `requests`.
    static func loadAll(_ requests: [ImageRequest], pipeline: ImagePipeline, concurrency: Int,
                        onEach: @escaping @Sendable (Int, Result<(ImageResponse, Double), any Error>) -> Void = { _, _ in })
        async -> [Result<(ImageResponse, Double), any Error>] {
        var results = [Result<(ImageResponse, Double), any Error>?](repeating: nil, count: requests.count)
        await withTaskGroup(of: (Int, Result<(ImageResponse, Double), any Error>).self) { group in
            var next = 0
            func startNext() {
                guard next < requests.count else { return }
                let index = next, request = requests[index]
                next += 1
                group.addTask {
                    let start = Date()
                    do {
                        let response = try await pipeline.image(for: request)
                        return (index, .success((response, Date().timeIntervalSince(start))))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            // At most one task per request: --concurrency is a bound, and may be huge.
            for _ in 0..<min(concurrency, requests.count) { startNext() }
            while let (index, result) = await group.next() {
                results[index] = result
                onEach(index, result)
                startNext()
            }
        }
        return results.map { $0 ?? .failure(CancellationError()) }
    }
}
