import CodecJPEG
import CodecPNG
import Foundation
import PipelineCore
import PipelineTestSupport
import QOIExample
import Testing

/// The QOI plugin and a third party's loader inside the real pipeline, beside the shipped
/// JPEG and PNG decoders: chosen by magic bytes, thumbnails, coalescing and the memory cache,
/// typed errors wrapped per URL, the negative cache, and overriding a shipped decoder.
@Suite("Plugins in the pipeline", .timeLimit(.minutes(2)))
struct PluginPipelineTests {
    @Test func theRegistryPicksTheQOIDecoderByItsMagicBytesAmongTheShippedOnes() async throws {
        let qoi = try QOIFixture("glass-edge").qoi, jpeg = try sample("dunes-progressive.jpg"), png = try sample("glass-alpha.png")
        // QOI registered first, so it is asked last: the bytes decide, not the order.
        let registry = DecoderRegistry().registering(QOIDecoder()).registering(JPEGDecoder()).registering(PNGDecoder())
        #expect(registry.formats == [.qoi, .jpeg, .png])
        #expect(registry.format(of: qoi) == .qoi && registry.format(of: jpeg) == .jpeg && registry.format(of: png) == .png)
        #expect(registry.decoder(for: qoi) is QOIDecoder)
        #expect(registry.decoder(for: jpeg) is JPEGDecoder && registry.decoder(for: png) is PNGDecoder)
        #expect(ImageFormat.sniff(qoi) == nil, "the core's table of known formats has never heard of QOI")
        #expect(ImageFormat.qoi == "qoi" && ImageFormat.qoi.mimeType == "image/qoi" && ImageFormat.qoi.fileExtension == "qoi")

        // Through the pipeline, even under a misleading name and Content-Type.
        let loader = ShelfLoader(["photo.jpg": .bytes(qoi, contentType: "image/jpeg"), "dunes": .bytes(jpeg), "glass": .bytes(png)])
        let pipeline = ImagePipeline(configuration: .init(decoders: registry, loaders: LoaderRegistry().registering(loader)))
        let response = try await pipeline.image(for: ImageRequest(url: shelf("photo.jpg")))
        #expect(response.format == .qoi && response.source == .loader)  // a plugin loader that does not say
        #expect(difference(response.bitmap, try QOIFixture("glass-edge").premultiplied) == nil)
        #expect(try await pipeline.image(for: ImageRequest(url: shelf("dunes"), width: 50, height: 50)).format == .jpeg)
        #expect(try await pipeline.image(for: ImageRequest(url: shelf("glass"), width: 50, height: 50)).format == .png)
    }

    @Test(arguments: [(ContentMode.fit, 40, 40), (.fill, 30, 30), (.fit, 200, 200)])
    func aThumbnailThroughThePipelineHasThePlannedSizeAndPixels(_ mode: ContentMode, _ width: Int, _ height: Int) async throws {
        let fixture = try QOIFixture("glass-edge")
        let pipeline = makePipeline(loader: ShelfLoader(["glass": .bytes(fixture.qoi)]), decoders: .withQOI())
        let box = PixelSize(width: width, height: height)
        let response = try await pipeline.image(for: ImageRequest(url: shelf("glass"), width: width, height: height, contentMode: mode))
        let plan = ResizePlan(source: fixture.size, target: .pixels(box), contentMode: mode)
        #expect(response.originalSize == fixture.size)
        #expect(response.bitmap.size == plan.outputSize)
        #expect(response.bitmap.width <= box.width && response.bitmap.height <= box.height)
        // The decoder shrinks the whole picture to the plan's scaled size while reading; the
        // pipeline crops (fill) and finishes from that.
        let decoded = plan.scaledSize == fixture.size ? fixture.premultiplied : Resampler.resample(fixture.premultiplied, to: plan.scaledSize)
        #expect(difference(response.bitmap, Resampler.resample(decoded, plan: plan)) == nil)
    }

    @Test func concurrentRequestsShareOneLoadAndOneDecodeThenTheMemoryCacheAnswers() async throws {
        let fixture = try QOIFixture("aurora")
        let loader = HeldLoader()
        let decoder = CountingWrapper(QOIDecoder())
        let recorder = EventRecorder()
        let pipeline = makePipeline(loader: loader, decoders: .withQOI(decoder), events: recorder)
        let url = try #require(URL(string: "test:///aurora.qoi"))
        let request = ImageRequest(url: url, width: 48, height: 48)
        let callers = (0..<6).map { _ in Task { try await pipeline.image(for: request) } }
        // Every caller has entered the pipeline (and so joined the work in flight, which happens
        // before its first suspension) and the one load is held.
        try #require(await loader.waitUntil { loader in
            loader.heldURLs.count == 1 && recorder.count { if case .started = $0 { true } else { false } } == 6
        })
        #expect(loader.release(url, with: .success(.data(fixture.qoi, ResponseMetadata()))) == 1)
        var responses: [ImageResponse] = []
        for caller in callers { responses.append(try await caller.value) }
        #expect(loader.loadCount(url) == 1)
        #expect(decoder.sessions == 1 && decoder.decodes == 1)
        #expect(responses.allSatisfy { $0.bitmap == responses[0].bitmap && $0.format == .qoi })
        #expect(responses[0].bitmap.size == PixelSize(width: 48, height: 32))

        let again = try await pipeline.image(for: request)
        #expect(again.source == .memory && again.bitmap == responses[0].bitmap)
        #expect(pipeline.cachedImage(for: request)?.bitmap == again.bitmap)
        #expect(decoder.decodes == 1 && loader.loadCount(url) == 1)
    }

    @Test func badQOIFilesFailWithTheDecodersOwnErrorAndAreNegativelyCached() async throws {
        let good = try QOIFixture("glass-edge").qoi
        let cases: [(name: String, data: Data, error: any Error & Equatable)] = [
            ("cut", good.prefix(good.count / 2), QOIError.truncatedPixels(expected: 96 * 64)),
            ("header", good.prefix(10), QOIError.truncatedHeader(byteCount: 10)),
            ("channels", qoiFile(width: 2, height: 2, channels: 1, body: qoiEnd), QOIError.badChannels(1)),
            ("empty", qoiFile(width: 0, height: 7, body: qoiEnd), QOIError.emptySize(width: 0, height: 7)),
            ("huge", qoiFile(width: 50_000, height: 50_000, body: qoiEnd),
             ImagePipelineError.tooManyPixels(PixelSize(width: 50_000, height: 50_000), limit: 100_000_000)),
        ]
        let loader = ShelfLoader(Dictionary(uniqueKeysWithValues: cases.map { ($0.name, .bytes($0.data)) }))
        let decoder = CountingWrapper(QOIDecoder())
        let pipeline = makePipeline(loader: loader, decoders: .withQOI(decoder))
        for (name, _, expected) in cases {
            let url = shelf(name)
            for _ in 0..<2 {
                do {
                    _ = try await pipeline.image(for: ImageRequest(url: url, width: 32, height: 32))
                    Issue.record("\(name): expected an error")
                } catch let error as ImagePipelineError {
                    #expect(error == .decodingFailed(url, underlying: expected), "\(name)")
                    #expect(error.url == url && error.isPermanent)
                    #expect(String(describing: error).hasPrefix("cannot decode shelf://\(name): "))
                    if let own = expected as? QOIError {
                        #expect(error.underlyingError as? QOIError == own)
                    } else {
                        #expect(error.underlyingError as? ImagePipelineError == expected as? ImagePipelineError)
                    }
                }
            }
            #expect(loader.loadCount(url) == 1, "\(name): the second request is answered by the negative cache")
        }
        #expect(decoder.sessions == cases.count, "no bad file was opened twice")
        #expect(decoder.decodes == 1, "only the cut file got past its header")
    }

    @Test func aNewerJPEGDecoderOverridesTheShippedOne() async throws {
        let jpeg = try sample("dunes-progressive.jpg"), qoi = try QOIFixture("aurora").qoi
        let newer = CountingWrapper(JPEGDecoder())
        let registry = DecoderRegistry().registering(JPEGDecoder()).registering(QOIDecoder()).registering(newer)
        #expect(registry.decoder(for: jpeg) is CountingWrapper<JPEGDecoder>)
        let pipeline = ImagePipeline(configuration: .init(
            decoders: registry, loaders: LoaderRegistry().registering(ShelfLoader(["dunes": .bytes(jpeg), "aurora": .bytes(qoi)]))))
        let photo = try await pipeline.image(for: ImageRequest(url: shelf("dunes"), width: 64, height: 64))
        #expect(photo.format == .jpeg)
        #expect(newer.sessions == 1 && newer.decodes == 1)
        let other = try await pipeline.image(for: ImageRequest(url: shelf("aurora"), width: 64, height: 64))
        #expect(other.format == .qoi && newer.sessions == 1, "QOI data does not reach the JPEG decoder")
    }

    @Test func aCustomLoadersOwnErrorReachesTheCallerUnchanged() async throws {
        let loader = ShelfLoader(["gone": .failure(.withdrawn), "busy": .failure(.busy)])
        let pipeline = makePipeline(loader: loader, decoders: .withQOI())
        for (name, expected) in [("gone", ShelfError.withdrawn), ("busy", .busy)] {
            let url = shelf(name)
            for _ in 0..<2 {
                do {
                    _ = try await pipeline.image(for: ImageRequest(url: url))
                    Issue.record("expected an error")
                } catch let error as ImagePipelineError {
                    #expect(error == .loadingFailed(url, underlying: expected))
                    #expect(error.underlyingError as? ShelfError == expected)
                    #expect(error.isPermanent == expected.isPermanent)
                    #expect(error.localizedDescription == "cannot load shelf://\(name): \(expected)")
                }
            }
        }
        #expect(loader.loadCount(shelf("gone")) == 1, "permanent: the second request is answered by the negative cache")
        #expect(loader.loadCount(shelf("busy")) == 2, "temporary: the second request loads again")
    }

    @Test func aNotFoundFromACustomLoaderIsNegativelyCachedLikeA404() async throws {
        let loader = ShelfLoader([:])
        let pipeline = makePipeline(loader: loader, decoders: .withQOI())
        let url = shelf("missing")
        for _ in 0..<2 {
            await #expect(throws: ImagePipelineError.loadingFailed(url, underlying: ImagePipelineError.notFound(url))) {
                try await pipeline.image(for: ImageRequest(url: url, width: 10, height: 10))
            }
        }
        #expect(loader.loadCount(url) == 1)
        do {
            _ = try await pipeline.image(for: ImageRequest(url: url))
        } catch let error as ImagePipelineError {
            #expect(error.underlyingError as? ImagePipelineError == .notFound(url))
            #expect(error.description == "shelf://missing was not found")
        }
    }

    @Test func gifBytesNameTheModuleToLink() async throws {
        let pipeline = makePipeline(loader: ShelfLoader(["anim": .bytes(Data("GIF89a".utf8) + Data(count: 32))]), decoders: .withQOI())
        do {
            _ = try await pipeline.image(for: ImageRequest(url: shelf("anim")))
            Issue.record("expected an error")
        } catch let error as ImagePipelineError {
            #expect(error.underlyingError as? ImagePipelineError == .noDecoder(format: .gif))
            #expect(error.description == "cannot decode shelf://anim: GIF data, but no GIF decoder is registered: "
                    + "link CodecGIF and register `GIFDecoder()`")
        }
    }
}
