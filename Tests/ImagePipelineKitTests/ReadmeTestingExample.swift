import Foundation
import ImagePipelineTesting
import PipelineCore
import Testing

@Test func twoCallersShareOneDownload() async throws {
    let loader = HeldLoader()                          // holds each load until the test releases it
    let pipeline = ImagePipeline(configuration: .init(
        decoders: DecoderRegistry([CountingDecoder()]), loaders: LoaderRegistry([loader])))
    let request = ImageRequest(url: try #require(URL(string: "test:///64x48/1")), width: 32, height: 32)
    async let first = pipeline.image(for: request)
    async let second = pipeline.image(for: request)
    try #require(await loader.waitUntil { $0.heldURLs.count == 1 })
    try #require(await pipeline.waitForWaiters(2, for: request))   // both callers joined the one load
    loader.releaseWithFakeData(request.url)            // a 64×48 FakeImage, as the URL says
    #expect(try await first.bitmap.size == PixelSize(width: 32, height: 24))
    #expect(try await second.source == .network && loader.loadCount(request.url) == 1)
}
