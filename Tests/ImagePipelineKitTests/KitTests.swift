import CacheDisk
import Foundation
import ImagePipelineKit
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("ImagePipelineKit", .timeLimit(.minutes(2)))
struct KitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theAcceptHeaderNamesTheRegisteredFormatsNewestFirst() {
        let registry = DecoderRegistry([CountingDecoder(format: .jpeg), CountingDecoder(format: .png), TestImageDecoder(),
                                        CountingDecoder(format: "nomime"), CountingDecoder(format: .jpeg)])
        #expect(registry.acceptHeader() == "image/jpeg,image/x-test,image/png,image/*;q=0.8,*/*;q=0.5")
        #expect(registry.acceptHeader(fallback: "") == "image/jpeg,image/x-test,image/png")
        #expect(DecoderRegistry().acceptHeader() == "image/*;q=0.8,*/*;q=0.5")
        let standard = DecoderRegistry.standard.acceptHeader()
        let avif = DecoderRegistry.standard.formats.contains(.avif) ? "image/avif," : ""
        #expect(standard == "image/jxl,image/gif,image/heic,\(avif)image/webp,image/png,image/jpeg,image/svg+xml,image/*;q=0.8,*/*;q=0.5")
    }

    @Test func theStandardRegistriesHoldEveryShippedPiece() {
        #expect(DecoderRegistry.standard.formats.isSuperset(of: [.jpeg, .png, .webp, .heif, .gif, .svg]))
        #expect(LoaderRegistry.standard(accept: "*/*").schemes == ["http", "https", "file", "data"])
        #expect(EncoderRegistry.standard.formats.contains(.png))
        // Every encoder the package ships (imgpipe writes exactly these): GIF was missing.
        #expect(EncoderRegistry.standard.formats == [.jpeg, .png, .webp, .avif, .heif, .gif, .jxl])
        #expect(EncoderRegistry.standard.all.reversed().map(\.format) == [.jpeg, .png, .webp, .avif, .heif, .gif, .jxl])
    }

    /// `standard(codecStandardError:)` is the same list, with the HEIF and JPEG XL decoders
    /// told what to do with their libraries' stderr writes.
    @Test func theQuietStandardDecodersAreTheSameList() {
        let quiet = DecoderRegistry.standard(codecStandardError: .discardedWhileDecoding)
        #expect(quiet.all.map { "\(type(of: $0))" } == DecoderRegistry.standard.all.map { "\(type(of: $0))" })
        #expect(quiet.acceptHeader() == DecoderRegistry.standard.acceptHeader())
        let heif = quiet.all.compactMap { $0 as? HEIFDecoder }, jxl = quiet.all.compactMap { $0 as? JXLDecoder }
        #expect(heif.count == 1 && heif.allSatisfy { $0.standardError == .discardedWhileDecoding })
        #expect(jxl.count == 1 && jxl.allSatisfy { $0.standardError == .discardedWhileDecoding })
        #expect(DecoderRegistry.standard.all.compactMap { $0 as? HEIFDecoder }.allSatisfy { $0.standardError == .inherited })
        #expect(DecoderRegistry.standard.all.compactMap { $0 as? JXLDecoder }.allSatisfy { $0.standardError == .inherited })
    }

    /// Over HTTP (the fixture server answers `/header/…` only when `Accept` is exactly the
    /// derived value) into the disk cache directory given; then every bundled sample from files.
    @Test func theStandardPipelineSendsItsAcceptHeaderAndUsesItsDiskCache() async throws {
        try await withTemporaryDirectory(prefix: "KitTests") { folder in
            var configuration = try ImagePipeline.Configuration.standard(diskCache: .directory(folder))
            let accept = DecoderRegistry.standard.acceptHeader()
            configuration.decoders.register(TestImageDecoder())  // the fixture server's format
            let pipeline = ImagePipeline(configuration: configuration)
            try await withFixtureServer { server in
                let value = try #require(accept.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let url = server.url("/header/kit?name=Accept&value=" + value)
                let response = try await pipeline.image(for: ImageRequest(url: url))
                #expect(response.source == .network && response.bitmap.size == PixelSize(width: 4, height: 3))
                #expect(await configuration.diskCache?.cachedData(for: url) != nil)
                let name = DiskCache.fileName(for: url)  // in the folder of its first two digits
                #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(name.prefix(2))/\(name)").path))
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Samples").path) {
                let file = Self.root.appendingPathComponent("Samples/\(name)")
                let response = try await pipeline.image(for: ImageRequest(url: file, width: 64, height: 64))
                #expect(response.bitmap.size.width <= 64 && response.bitmap.size.height <= 64, "\(name)")
            }
        }
    }

    @Test func theDefaultDiskCacheIsInTheXDGCacheDirectory() async throws {
        let name = "ImagePipelineKitTests-\(UUID().uuidString)"
        let directory = DiskCache.defaultDirectory(name: name)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configuration = try ImagePipeline.Configuration.standard(diskCache: .named(name))
        let disk = try #require(configuration.diskCache as? DiskCache)
        await disk.waitForMaintenance()  // its opening scan, before the folder is removed
        #expect(disk.directory.standardizedFileURL == directory.standardizedFileURL)
        let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        let base = xdg ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache").path
        #expect(directory.standardizedFileURL.path == URL(fileURLWithPath: base).appendingPathComponent(name).standardizedFileURL.path)
    }

    /// `.none` is memory only: no cache object, no folder anywhere.
    @Test func noDiskCacheMeansNoDiskCache() throws {
        #expect(try ImagePipeline.Configuration.standard(diskCache: .none).diskCache == nil)
    }

    /// The policy reaches the HTTP loader: `.publicOnly` refuses the loopback fixture, which
    /// never sees the request.
    @Test func theConnectionPolicyIsTheHTTPLoaders() async throws {
        let pipeline = try ImagePipeline.standard(diskCache: .none, connectionPolicy: .publicOnly)
        try await withFixtureServer { server in
            let url = server.url("/image/kit-policy")
            await #expect(throws: ImagePipelineError.self) { try await pipeline.image(for: ImageRequest(url: url)) }
            let hits = try await server.hits("/image/kit-policy")
            #expect(hits == 0)
        }
    }

    @Test func dataURLsLoadThroughTheStandardPipeline() async throws {
        try await withTemporaryDirectory(prefix: "KitTests") { folder in
            let pipeline = ImagePipeline(configuration: try .standard(diskCache: .directory(folder)))
            let png = try Data(contentsOf: Self.root.appendingPathComponent("Samples/rings.png"))
            let url = try #require(URL(string: "data:image/png;base64," + png.base64EncodedString()))
            let response = try await pipeline.image(for: ImageRequest(url: url, width: 32, height: 32))
            #expect(response.format == .png && response.bitmap.size.width <= 32)
        }
    }
}
