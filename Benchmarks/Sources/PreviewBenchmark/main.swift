// Issue 26's measurements: previews of a progressive JPEG arriving slowly, and placeholder
// lookups in a large disk cache. Started by Benchmarks/previews.sh, which runs the fixture
// server and makes the inputs.
//
// Usage: PreviewBenchmark previews <slow-url> <size> [runs]
//   <slow-url> serves a progressive JPEG in timed pieces (the fixture server's /slow with file=).
//   Loads it with previews on (each run a fresh pipeline, no disk cache) and off, and prints:
//   time to the first preview, how many, each one's PSNR against the final, time to the final
//   (and without previews), and the previews' decode time as a share of the final decode's, both
//   as the pipeline reports them (ImagePipelineEvent.previewDecoded and .decoded: time on the
//   decode pool, one thread each), beside the whole process's CPU with previews minus without.
// Usage: PreviewBenchmark thumbhash <pam>
//   Times ThumbHash(bitmap:) on the straight RGBA picture in <pam> (written by the driver, so
//   the reference implementation times the same pixels), and on a 1280-px decode.
// Usage: PreviewBenchmark placeholders <cache-dir> <entries> <jpeg>
//   Fills a DiskCache in <cache-dir> with <entries> entries (kept for the next run), each with
//   a placeholder, then times placeholder(for:) on a cold pipeline, and the bytes it reads
//   (/proc/self/io), beside a disk-hit decode of <jpeg> through the same cache.
import CacheDisk
import CodecJPEG
import Foundation
import LoaderHTTP
import PipelineCore
import Synchronization

/// Prints `line` at once (unbuffered), so results reach a pipe even if a later step fails.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Seconds of CPU this process has used (user + system, every thread).
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Bytes this process has read with read(2)-like calls so far (`rchar` in /proc/self/io).
func bytesRead() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("rchar:") }) else { return -1 }
    return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? -1
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// PSNR in dB over R, G, B of two bitmaps of one size, as stored.
func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
    guard a.size == b.size else { return 0 }
    var squared = 0.0, count = 0
    for y in 0..<a.height {
        for x in 0..<a.width {
            let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
            for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b)] {
                let d = Double(Int(u) - Int(v))
                squared += d * d
                count += 1
            }
        }
    }
    return squared == 0 ? .infinity : 10 * log10(255 * 255 / (squared / Double(count)))
}

/// Seconds the pipeline reported for preview decodes and for decodes.
final class DecodeSeconds: Sendable {
    private let totals = Mutex((previews: 0.0, decodes: 0.0))
    var previews: Double { totals.withLock { $0.previews } }
    var decodes: Double { totals.withLock { $0.decodes } }

    func record(_ event: ImagePipelineEvent) {
        switch event {
        case .previewDecoded(_, _, let seconds): totals.withLock { $0.previews += seconds }
        case .decoded(_, let seconds): totals.withLock { $0.decodes += seconds }
        default: break
        }
    }
}

func pipeline(previews: Bool, diskCache: (any DataCaching)? = nil, seconds: DecodeSeconds? = nil) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([JPEGDecoder()]),
                                                    loaders: LoaderRegistry([HTTPDataLoader()]), diskCache: diskCache)
    if let seconds { configuration.eventHandler = { seconds.record($0) } }
    configuration.previewPolicy = previews ? ImagePipeline.PreviewPolicy.default : nil
    return ImagePipeline(configuration: configuration)
}

/// One load of `request`: seconds to the first preview, the previews with their arrival, the
/// final, seconds to it, process CPU seconds, and the pipeline's preview and decode seconds.
struct Load {
    var first: Double?
    var previews: [(ImageResponse, Double)]
    var final: ImageResponse
    var seconds: Double
    var cpu: Double
    var previewDecodeSeconds: Double
    var decodeSeconds: Double
}

func load(_ request: ImageRequest, previews: Bool) async throws -> Load {
    let decodeSeconds = DecodeSeconds()
    let pipeline = pipeline(previews: previews, seconds: decodeSeconds)
    let cpu = cpuSeconds(), start = now()
    let task = pipeline.imageTask(for: request)
    var seen: [(ImageResponse, Double)] = []
    for await preview in task.previews { seen.append((preview, now() - start)) }
    let final = try await task.response
    let seconds = now() - start
    return Load(first: seen.first?.1, previews: seen, final: final, seconds: seconds, cpu: cpuSeconds() - cpu,
                previewDecodeSeconds: decodeSeconds.previews, decodeSeconds: decodeSeconds.decodes)
}

func previewsBenchmark(url: URL, size: Int, runs: Int) async throws {
    let request = ImageRequest(url: url, width: size, height: size)
    guard case .data(let data, _) = try await HTTPDataLoader().load(DataLoadRequest(url: url)) else { return }
    var withPreviews: [Load] = []
    var without: [Load] = []
    for _ in 0..<runs {
        withPreviews.append(try await load(request, previews: true))
        without.append(try await load(request, previews: false))
    }
    let sample = withPreviews[withPreviews.count / 2]
    let quality = sample.previews.map { String(format: "%.1f", psnr($0.0.bitmap, sample.final.bitmap)) }
    let arrivals = sample.previews.map { String(format: "%.0f", $0.1 * 1000) }
    let extraCPU = median(withPreviews.map(\.cpu)) - median(without.map(\.cpu))
    let previewSeconds = median(withPreviews.map(\.previewDecodeSeconds))
    let finalSeconds = median(without.map(\.decodeSeconds))
    say(String(format: "previews of a %d-byte progressive JPEG at %d px (median of %d runs):", data.count, size, runs))
    say(String(format: "  first preview       %6.0f ms", (median(withPreviews.compactMap(\.first))) * 1000))
    say("  previews            \(sample.previews.count) (arrived at \(arrivals.joined(separator: ", ")) ms)")
    say("  PSNR to the final   \(quality.joined(separator: ", ")) dB")
    say(String(format: "  final picture       %6.0f ms with previews, %6.0f ms without", median(withPreviews.map(\.seconds)) * 1000,
               median(without.map(\.seconds)) * 1000))
    say(String(format: "  preview decodes     %6.1f ms per load = %.0f%% of the final decode (%.1f ms), as the pipeline reports them",
               previewSeconds * 1000, previewSeconds / finalSeconds * 100, finalSeconds * 1000))
    say(String(format: "  process CPU         %+6.1f ms per load with previews (everything: the body's copy, the previews)", extraCPU * 1000))
}

func placeholdersBenchmark(cacheDirectory: URL, entries: Int, jpeg: URL) async throws {
    let cache = try DiskCache(directory: cacheDirectory, sizeLimit: 8 << 30)
    let picture = try Data(contentsOf: jpeg)
    let hash = ThumbHash(bitmap: try JPEGDecoder().decode(picture, options: DecodeOptions(targetSize: PixelSize(width: 100, height: 100))).bitmap)
    func url(_ index: Int) -> URL { URL(string: "https://cdn.example/pictures/\(index).jpg")! }
    let marker = cacheDirectory.appendingPathComponent("filled-\(entries)")
    if !FileManager.default.fileExists(atPath: marker.path) {
        let start = now()
        // Every entry's body is the real picture: a lookup that read it would show in the bytes read.
        await withTaskGroup(of: Void.self) { group in
            for batch in stride(from: 0, to: entries, by: 1000) {
                group.addTask {
                    for index in batch..<min(batch + 1000, entries) {
                        await cache.storeData(picture, info: CacheEntryInfo(freshUntil: .distantFuture, placeholder: hash), for: url(index))
                    }
                }
            }
        }
        await cache.waitForMaintenance()
        _ = FileManager.default.createFile(atPath: marker.path, contents: nil)
        say(String(format: "filled %d entries of %d bytes in %.0f s", entries, picture.count, now() - start))
    }
    let cold = pipeline(previews: false, diskCache: try DiskCache(directory: cacheDirectory, sizeLimit: 8 << 30))
    // Two disjoint sets of random entries, neither touched before in this process: the same
    // page-cache state for both (whatever the system kept of the cache's files).
    let shuffled = Array(0..<entries).shuffled()
    let probes = Array(shuffled.prefix(2000)), others = Array(shuffled.dropFirst(2000).prefix(2000))
    func request(_ index: Int) -> ImageRequest { ImageRequest(url: url(index), width: 160, height: 160) }
    var times: [Double] = []
    var found = 0
    let read = bytesRead()
    for index in probes {
        let start = now()
        if await cold.placeholder(for: request(index)) == hash { found += 1 }
        times.append(now() - start)
    }
    let perLookup = Double(bytesRead() - read) / Double(probes.count)
    var warm: [Double] = []
    for index in probes {
        let start = now()
        _ = await cold.placeholder(for: request(index))
        warm.append(now() - start)
    }
    var decodes: [Double] = []
    for index in others {
        let start = now()
        _ = try await cold.image(for: request(index))
        decodes.append(now() - start)
    }
    func p99(_ values: [Double]) -> Double { values.sorted()[values.count * 99 / 100] }
    say("placeholder(for:) on a disk cache of \(entries) entries, \(probes.count) random entries each, a cold pipeline:")
    say(String(format: "  placeholder(for:), first read  median %.3f ms, p99 %.3f ms; %d of %d found; %.0f bytes read per lookup (bodies are %d bytes)",
               median(times) * 1000, p99(times) * 1000, found, probes.count, perLookup, picture.count))
    say(String(format: "  placeholder(for:), again       median %.3f ms, p99 %.3f ms", median(warm) * 1000, p99(warm) * 1000))
    say(String(format: "  image(for:) from disk (read + decode to 160 px), other entries: median %.2f ms, p99 %.2f ms",
               median(decodes) * 1000, p99(decodes) * 1000))
}

/// The straight RGBA pixels of a PAM file (`TUPLTYPE RGB_ALPHA`, as Pillow writes it).
func readPAM(_ url: URL) throws -> Bitmap? {
    let data = try Data(contentsOf: url)
    guard let end = data.range(of: Data("ENDHDR\n".utf8)) else { return nil }
    let header = String(decoding: data[..<end.lowerBound], as: UTF8.self)
    var fields: [String: Int] = [:]
    for line in header.split(separator: "\n") {
        let parts = line.split(separator: " ")
        if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
    }
    guard let width = fields["WIDTH"], let height = fields["HEIGHT"], fields["DEPTH"] == 4 else { return nil }
    return Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Straight,
                  bytes: [UInt8](data[end.upperBound...]))
}

func thumbHashBenchmark(pam: URL, jpeg: URL?) throws {
    guard let small = try readPAM(pam) else { say("cannot read \(pam.path)"); exit(1) }
    func time(_ bitmap: Bitmap, rounds: Int) -> (Double, ThumbHash) {
        var hash = ThumbHash(bitmap: bitmap)
        let start = now()
        for _ in 0..<rounds { hash = ThumbHash(bitmap: bitmap) }
        return ((now() - start) / Double(rounds), hash)
    }
    let (seconds, hash) = time(small, rounds: 2000)
    say(String(format: "  ours, %@ RGBA          %.3f ms per hash  %@", "\(small.size)", seconds * 1000, hash.base64))
    if let jpeg {
        let decoded = try JPEGDecoder().decode(try Data(contentsOf: jpeg), options: DecodeOptions()).bitmap
        let (big, _) = time(decoded, rounds: 50)
        say(String(format: "  ours, %@ decode (shrunk inside)  %.3f ms per hash", "\(decoded.size)", big * 1000))
    }
}

extension PixelSize {
    /// This size fitted inside `side`×`side`, keeping the aspect ratio.
    func fitting(_ side: Int) -> PixelSize {
        let scale = min(1, Double(side) / Double(max(width, height)))
        return PixelSize(width: max(1, Int((Double(width) * scale).rounded())), height: max(1, Int((Double(height) * scale).rounded())))
    }
}

let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "previews" where arguments.count >= 4:
    guard let url = URL(string: arguments[2]), let size = Int(arguments[3]) else { exit(2) }
    try await previewsBenchmark(url: url, size: size, runs: arguments.count > 4 ? Int(arguments[4]) ?? 3 : 3)
case "thumbhash" where arguments.count >= 3:
    try thumbHashBenchmark(pam: URL(fileURLWithPath: arguments[2]),
                           jpeg: arguments.count > 3 ? URL(fileURLWithPath: arguments[3]) : nil)
case "placeholders" where arguments.count >= 5:
    guard let entries = Int(arguments[3]) else { exit(2) }
    try await placeholdersBenchmark(cacheDirectory: URL(fileURLWithPath: arguments[2]), entries: entries,
                                    jpeg: URL(fileURLWithPath: arguments[4]))
default:
    say("usage: PreviewBenchmark previews <slow-url> <size> [runs] | thumbhash <pam> [<jpeg>] | placeholders <cache-dir> <entries> <jpeg>")
    exit(2)
}
