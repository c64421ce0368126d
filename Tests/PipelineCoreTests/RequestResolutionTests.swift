import Foundation
@testable import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// A request's resolution (fetch URL, cache identity, memory key) and the keys derived from it
/// that outlive the process: disk entries are named by the cache identity, renditions by a digest
/// of the memory key. Pinned here as text, so a faster way of computing them cannot move them.
@Suite("Request resolution and persisted keys")
struct RequestResolutionTests {
    static func pipeline(_ urlBuilder: any FetchURLBuilding = WidthBucketURLBuilder()) -> ImagePipeline {
        makePipeline(loader: HeldLoader(schemes: ["http", "https", "file"]), urlBuilder: urlBuilder)
    }

    static func request(_ text: String, width: Int = 256, height: Int = 256) throws -> ImageRequest {
        ImageRequest(url: try #require(URL(string: text)), width: width, height: height)
    }

    /// Requests of every shape the resolver treats apart, each with the fetch URL, the cache
    /// identity and the JPEG rendition key it had before the resolution was memoised.
    static func pinned() throws -> [(ImageRequest, fetch: String, identity: String, rendition: String)] {
        let plain = try request("https://cdn.example.com/photos/1.jpg")
        var fill = try request("https://cdn.example.com/p.jpg?w=999&x=1#frag", width: 100, height: 50)
        fill.contentMode = .fill
        fill.cropAnchor = .top
        var keyed = try request("https://cdn.example.com/a.jpg?token=abc", width: 300, height: 300)
        keyed.cacheKey = "photo 42"
        var processed = try request("http://x.example/a.png")
        processed.processors = [ImageProcessor.gaussianBlur(radius: 2)]
        processed.processing.transform = .right
        let original = ImageRequest(url: try #require(URL(string: "https://x.example/big.jpg")))
        let file = ImageRequest(url: URL(fileURLWithPath: "/tmp/a b.png"), width: 64, height: 64)
        return [
            (plain, "https://cdn.example.com/photos/1.jpg?w=320", "https://cdn.example.com/photos/1.jpg?w=320",
             "imgpipe-rendition:///ec6e386a958829296224e55fd8106e4f730c626157d0f7a2f51ce32ebfea7381"),
            (fill, "https://cdn.example.com/p.jpg?x=1&w=160#frag", "https://cdn.example.com/p.jpg?x=1&w=160#frag",
             "imgpipe-rendition:///0907d85656c44759bfb04b6c5e32876fca563d054056cdf476d0e60161043aae"),
            (keyed, "https://cdn.example.com/a.jpg?token=abc&w=320", "imgpipe-key:photo%2042?w=320",
             "imgpipe-rendition:///8f1d51ea300fbf89ea99145ee3e1825fb42fd4b427bcb75bfb68aac193755cef"),
            (processed, "http://x.example/a.png?w=320", "http://x.example/a.png?w=320",
             "imgpipe-rendition:///0c52f6d01385cf8fcfd2d4bbe2f4123922bbccaa235aea1a4b5ba1dd2b37f43b"),
            (original, "https://x.example/big.jpg", "https://x.example/big.jpg",
             "imgpipe-rendition:///a0d592b431370df370af322f1bb169f57f300db806ac0248bda8c3a7f1813fc8"),
            (file, "file:///tmp/a%20b.png", "file:///tmp/a%20b.png",
             "imgpipe-rendition:///2747b502a0082b2bd04263e0286b0b5b61b720ce32c21e92c269318c0a7d5b83"),
        ]
    }

    @Test func fetchURLsIdentitiesAndRenditionKeysKeepTheirText() throws {
        let pipeline = Self.pipeline()
        for (request, fetch, identity, rendition) in try Self.pinned() {
            // Twice: the first resolution of the value and the one it keeps.
            for _ in 0..<2 {
                #expect(pipeline.fetchURL(for: request).absoluteString == fetch)
                #expect(pipeline.cacheURL(for: request).absoluteString == identity)
                let key = pipeline.key(for: request)
                #expect(key == ImageKey(request: request, cacheURL: pipeline.cacheURL(for: request)))
                #expect(RenditionStore.url(for: key, encoding: "jpeg")?.absoluteString == rendition)
            }
        }
    }

    /// The width-bucket builder behind a type of the test's own: a pipeline keeps no resolution
    /// for it, so it answers what resolving from scratch gives.
    struct UnkeptWidthBuckets: FetchURLBuilding {
        let base = WidthBucketURLBuilder()
        func fetchURL(for request: ImageRequest) -> URL { base.fetchURL(for: request) }
    }

    /// A builder that counts its calls.
    final class CountingURLBuilder: FetchURLBuilding, Sendable {
        let calls = Mutex(0)
        func fetchURL(for request: ImageRequest) -> URL {
            calls.withLock { $0 += 1 }
            return request.url
        }
    }

    static func expectSameResolution(_ request: ImageRequest, in pipeline: ImagePipeline, as reference: ImagePipeline,
                                     _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(pipeline.fetchURL(for: request) == reference.fetchURL(for: request), comment, sourceLocation: sourceLocation)
        #expect(pipeline.cacheURL(for: request) == reference.cacheURL(for: request), comment, sourceLocation: sourceLocation)
        #expect(pipeline.key(for: request) == reference.key(for: request), comment, sourceLocation: sourceLocation)
    }

    /// Every change of a resolved value, to a copy or in place, resolves anew; the value it was
    /// copied from keeps its own resolution.
    @Test func aChangedRequestResolvesAnew() throws {
        let pipeline = Self.pipeline(), reference = Self.pipeline(UnkeptWidthBuckets())
        #expect(pipeline.resolver != nil && reference.resolver == nil)
        let base = try Self.request("https://cdn.example.com/a.jpg", width: 100, height: 100)
        let other = try #require(URL(string: "https://cdn.example.com/b.jpg"))
        let changes: [(String, (inout ImageRequest) -> Void)] = [
            ("url", { $0.url = other }),
            ("targetSize", { $0.targetSize = .pixels(PixelSize(width: 600, height: 600)) }),
            ("original size", { $0.targetSize = .original }),
            ("contentMode", { $0.contentMode = .fill }),
            ("cropAnchor", { $0.contentMode = .fill; $0.cropAnchor = .bottom }),
            ("processing", { $0.processing.allowsUpscaling = true }),
            ("processors", { $0.processors = [ImageProcessor.gaussianBlur(radius: 1)] }),
            ("cacheKey", { $0.cacheKey = "photo 7" }),
        ]
        for (name, change) in changes {
            Self.expectSameResolution(base, in: pipeline, as: reference, "\(name): before")
            var copy = base
            change(&copy)
            Self.expectSameResolution(copy, in: pipeline, as: reference, "\(name): a changed copy")
            #expect(pipeline.key(for: copy) != pipeline.key(for: base), "\(name) is part of the key")
            Self.expectSameResolution(base, in: pipeline, as: reference, "\(name): the value copied from")
            var alone = try Self.request("https://cdn.example.com/a.jpg", width: 100, height: 100)
            Self.expectSameResolution(alone, in: pipeline, as: reference, "\(name): alone, before")
            change(&alone)
            Self.expectSameResolution(alone, in: pipeline, as: reference, "\(name): changed in place")
        }
    }

    /// A request's kept resolution belongs to the pipeline that made it: another pipeline, with
    /// other buckets or a strict configuration, resolves it by its own configuration.
    @Test func eachPipelineResolvesByItsOwnConfiguration() throws {
        let small = Self.pipeline(WidthBucketURLBuilder(buckets: [100]))
        let large = Self.pipeline(WidthBucketURLBuilder(buckets: [400]))
        var strictConfiguration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                              urlBuilder: WidthBucketURLBuilder(buckets: [100]))
        strictConfiguration.decodingStrictness = .strict
        let strict = ImagePipeline(configuration: strictConfiguration)
        let request = try Self.request("https://cdn.example.com/a.jpg", width: 90, height: 90)
        for _ in 0..<3 {
            #expect(small.fetchURL(for: request).absoluteString == "https://cdn.example.com/a.jpg?w=100")
            #expect(large.fetchURL(for: request).absoluteString == "https://cdn.example.com/a.jpg?w=400")
            #expect(small.key(for: request).processing.strictDecoding == false)
            #expect(strict.key(for: request).processing.strictDecoding == true)
            #expect(strict.cacheURL(for: request) == small.cacheURL(for: request))
        }
    }

    /// A URL builder or cache-key closure of the app's own runs on every lookup, as documented
    /// (it may answer differently from one call to the next).
    @Test func customBuildersAndCacheKeyClosuresRunOnEveryLookup() throws {
        let builder = CountingURLBuilder()
        let pipeline = Self.pipeline(builder)
        let request = try Self.request("https://cdn.example.com/a.jpg")
        for _ in 0..<3 { _ = pipeline.cachedImage(for: request) }
        #expect(builder.calls.withLock { $0 } == 3)

        let closureCalls = Mutex(0)
        var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                        urlBuilder: WidthBucketURLBuilder())
        configuration.cacheKey = { url in
            closureCalls.withLock { $0 += 1 }
            return url.absoluteString
        }
        let keyed = ImagePipeline(configuration: configuration)
        for _ in 0..<3 { _ = keyed.cachedImage(for: request) }
        #expect(closureCalls.withLock { $0 } == 3)
    }

    /// `cachedImage(for:)` answers a kept resolution's key as it answered before: a hit with
    /// the URL fetched, a miss once the entry is gone; the request's equality and hash ignore
    /// what it keeps.
    @Test func aKeptResolutionAnswersHitsAndMissesAsBefore() throws {
        let cache = MemoryCache<ImageKey, ImageContainer>(costLimit: 1 << 20)
        let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry(), loaders: LoaderRegistry(),
                                                          urlBuilder: WidthBucketURLBuilder(), memoryCache: cache))
        let request = try Self.request("https://cdn.example.com/a.jpg")
        let twin = try Self.request("https://cdn.example.com/a.jpg")
        #expect(pipeline.cachedImage(for: request) == nil)
        let bitmap = Bitmap(zeroed: PixelSize(width: 2, height: 2))
        cache.insert(ImageContainer(bitmap: bitmap, originalSize: bitmap.size, format: .jpeg),
                     for: pipeline.key(for: twin), cost: bitmap.cost)
        for _ in 0..<2 {
            let hit = try #require(pipeline.cachedImage(for: request))
            #expect(hit.source == .memory)
            #expect(hit.fetchURL?.absoluteString == "https://cdn.example.com/a.jpg?w=320")
        }
        #expect(request == twin)
        #expect(Set([request, twin]).count == 1)
        cache.removeAll()
        #expect(pipeline.cachedImage(for: request) == nil)
    }

    /// Copies of one value resolved from many tasks at once (a UI thread and the pipeline's
    /// callers) all get the one key.
    @Test func oneValueResolvedFromManyTasksAtOnceHasOneKey() async throws {
        let pipeline = Self.pipeline()
        let request = try Self.request("https://cdn.example.com/a.jpg")
        let expected = Self.pipeline(UnkeptWidthBuckets()).key(for: request)
        let keys = await withTaskGroup(of: [ImageKey].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<200).map { _ in pipeline.key(for: request) } }
            }
            return await group.reduce(into: [ImageKey]()) { $0 += $1 }
        }
        #expect(keys.count == 1_600)
        #expect(keys.allSatisfy { $0 == expected })
    }
}
