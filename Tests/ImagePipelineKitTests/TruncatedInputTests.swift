import Foundation
import ImagePipelineKit
import ImagePipelineTesting
import PipelineCore
import PipelineTestSupport
import Testing

/// Files cut short, of every format, at each ``DecodingStrictness`` level (libvips's
/// `fail_on`): what the decoders report as ``DecodeIssue``s, which levels fail and with which
/// typed error, and that no cache keeps a truncated picture (issue 41).
@Suite("Truncated input", .tags(.cpuBound))
struct TruncatedInputTests {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples")
    static let decoders = DecoderRegistry.standard(codecStandardError: .discardedWhileDecoding)
    static let levels = DecodingStrictness.allCases

    /// What a cut file gives: a picture with a truncation issue at `lenient` (the others fail
    /// with `truncatedData`), or `truncatedData` at every level (a codec that returns no
    /// partial picture).
    enum Expected: Sendable { case partialWhenLenient, failsAtEveryLevel }

    struct Cut: Sendable, CustomTestStringConvertible {
        let file: String
        /// A Samples/ file, or a corpus folder/file.
        let corpus: Bool
        let fraction: Double
        let expected: Expected
        var testDescription: String { "\(file) cut at \(Int(fraction * 100))%" }

        func data() throws -> Data? {
            let whole: Data
            if corpus {
                let parts = file.split(separator: "/").map(String.init)
                guard Corpus.has(parts[0]) else { return nil }
                whole = try Corpus.data(parts[0], parts[1])
            } else {
                whole = try Data(contentsOf: samples.appendingPathComponent(file))
            }
            return whole.prefix(Int(Double(whole.count) * fraction))
        }
    }

    static let cuts: [Cut] = [
        Cut(file: "mandelbrot.jpg", corpus: false, fraction: 0.5, expected: .partialWhenLenient),
        Cut(file: "dunes-progressive.jpg", corpus: false, fraction: 0.5, expected: .partialWhenLenient),
        Cut(file: "aurora.png", corpus: false, fraction: 0.5, expected: .failsAtEveryLevel),
        Cut(file: "glass-alpha.webp", corpus: false, fraction: 0.5, expected: .failsAtEveryLevel),
        // After the first frame: it is whole, the later frames are missing.
        Cut(file: "orbit.gif", corpus: false, fraction: 0.5, expected: .partialWhenLenient),
        // Inside the first frame: giflib cannot read it.
        Cut(file: "orbit.gif", corpus: false, fraction: 0.2, expected: .failsAtEveryLevel),
        Cut(file: "heif/example.heic", corpus: true, fraction: 0.5, expected: .failsAtEveryLevel),
        Cut(file: "heif/example.avif", corpus: true, fraction: 0.5, expected: .failsAtEveryLevel),
        Cut(file: "jxl/photo-d1.jxl", corpus: true, fraction: 0.5, expected: .failsAtEveryLevel),
    ]

    /// A pipeline on an `http` loader that answers every URL with `data` (as a network would),
    /// with a memory cache and a data cache the test can look into.
    static func pipeline(_ data: Data) -> (ImagePipeline, HeldLoader, MemoryCache<ImageKey, ImageContainer>, InMemoryDataCache) {
        let loader = HeldLoader(schemes: ["http"]) { _ in .success(.data(data, ResponseMetadata(freshFor: 3600, origin: .network))) }
        let memory = MemoryCache<ImageKey, ImageContainer>(costLimit: 64 << 20)
        let disk = InMemoryDataCache()
        let pipeline = makePipeline(loader: loader, decoders: decoders, memoryCache: memory, diskCache: disk, negativeCacheLifetime: 0)
        return (pipeline, loader, memory, disk)
    }

    static let url = URL(string: "http://origin.test/cut")!

    @Test(arguments: cuts)
    func eachLevelFailsOrShowsTheCutAsLibvipsDoes(_ cut: Cut) async throws {
        guard let data = try cut.data() else { return }
        for level in Self.levels {
            let (pipeline, loader, memory, disk) = Self.pipeline(data)
            let request = ImageRequest(url: Self.url, width: 32, height: 32, decoding: level)
            do {
                let response = try await pipeline.image(for: request)
                #expect(level == .lenient && cut.expected == .partialWhenLenient, "\(cut.testDescription) decoded at \(level)")
                #expect(!response.isComplete && response.issues.includesTruncation, "\(response.issues)")
                #expect(response.bitmap.size.isValid)
            } catch let error as ImagePipelineError {
                #expect(level != .lenient || cut.expected == .failsAtEveryLevel, "\(cut.testDescription) failed at \(level): \(error)")
                guard case .truncatedData? = error.underlyingError as? ImagePipelineError else {
                    Issue.record("\(cut.testDescription) at \(level): not a truncatedData error: \(error)"); continue
                }
                #expect(!error.isPermanent, "a truncation is not remembered: the next fetch may be whole")
            }
            // Shown or refused, a truncated picture is never kept: not in memory, its bytes not
            // on disk, and the next request loads them again.
            #expect(memory.count == 0, "\(cut.testDescription) at \(level): the memory cache kept it")
            #expect(await disk.cachedData(for: Self.url) == nil, "\(cut.testDescription) at \(level): its bytes were stored")
            _ = try? await pipeline.image(for: request)
            #expect(loader.loadCount(Self.url) == 2, "\(cut.testDescription) at \(level)")
        }
    }

    /// A header read of the same download (what a server asks first) keeps the bytes once the
    /// header parses; the strict decode that finds them cut removes them again.
    @Test func aHeaderReadThenAFailedDecodeLeavesNothingStored() async throws {
        let whole = try Data(contentsOf: Self.samples.appendingPathComponent("mandelbrot.jpg"))
        let (pipeline, _, memory, disk) = Self.pipeline(whole.prefix(whole.count / 2))
        let request = ImageRequest(url: Self.url, width: 32, height: 32, decoding: .failsOnTruncation)
        _ = try await pipeline.info(for: request)
        #expect(await disk.cachedData(for: Self.url) != nil, "the header read stores the bytes (else the check below proves nothing)")
        await #expect(throws: ImagePipelineError.self) { _ = try await pipeline.image(for: request) }
        #expect(await disk.cachedData(for: Self.url) == nil)
        #expect(memory.count == 0)
    }

    /// The whole file is cached as before: the rule is about truncation only.
    @Test func aWholeFileIsStillCached() async throws {
        let whole = try Data(contentsOf: Self.samples.appendingPathComponent("mandelbrot.jpg"))
        let (pipeline, loader, memory, disk) = Self.pipeline(whole)
        let response = try await pipeline.image(for: ImageRequest(url: Self.url, width: 32, height: 32))
        #expect(response.isComplete && response.issues.isEmpty)
        #expect(memory.count == 1)
        #expect(await disk.cachedData(for: Self.url) != nil)
        _ = try await pipeline.image(for: ImageRequest(url: Self.url, width: 32, height: 32))
        #expect(loader.loadCount(Self.url) == 1)
    }

    /// Damage libjpeg decodes past (not a cut): a warning, as libvips counts it (its
    /// `fail_on=error` passes the same file, `warning` fails it). Cached: the file is whole.
    @Test func libjpegsCorruptDataIsAWarningAsInLibvips() async throws {
        var bytes = [UInt8](try Data(contentsOf: Self.samples.appendingPathComponent("mandelbrot.jpg")))
        // A marker in the middle of the entropy-coded data: "Corrupt JPEG data: premature end
        // of data segment", then libjpeg goes on.
        let middle = bytes.count / 2
        bytes[middle] = 0xFF
        bytes[middle + 1] = 0xD0
        let data = Data(bytes)
        for level in Self.levels {
            let (pipeline, _, memory, _) = Self.pipeline(data)
            let request = ImageRequest(url: Self.url, width: 32, height: 32, decoding: level)
            do {
                let response = try await pipeline.image(for: request)
                #expect(level != .strict, "decoded at \(level)")
                #expect(response.isComplete && !response.issues.isEmpty && response.issues.allSatisfy { $0.severity == .warning },
                        "\(response.issues)")
                #expect(memory.count == 1)
            } catch let error as ImagePipelineError {
                #expect(level == .strict, "failed at \(level): \(error)")
                guard case .corruptData? = error.underlyingError as? ImagePipelineError else {
                    Issue.record("at \(level): not corruptData: \(error)"); continue
                }
            }
        }
    }

    /// A warning (an ancillary PNG chunk with a bad CRC, which libpng skips) fails at `warning` only.
    @Test func aWarningFailsOnlyAtTheWarningLevel() async throws {
        var bytes = [UInt8](try Data(contentsOf: Self.samples.appendingPathComponent("aurora.png")))
        let chunk: [UInt8] = [0, 0, 0, 3] + Array("tEXt".utf8) + Array("a\0b".utf8) + [0xDE, 0xAD, 0xBE, 0xEF]
        bytes.insert(contentsOf: chunk, at: 33)  // after IHDR
        for level in Self.levels {
            let (pipeline, _, _, _) = Self.pipeline(Data(bytes))
            let request = ImageRequest(url: Self.url, width: 32, height: 32, decoding: level)
            do {
                let response = try await pipeline.image(for: request)
                #expect(level != .strict)
                #expect(response.issues.map(\.severity) == [.warning], "\(response.issues)")
            } catch {
                #expect(level == .strict, "failed at \(level): \(error)")
            }
        }
    }
}
