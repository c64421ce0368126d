import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `ImageResponse.source` says what happened: which kind of loader, and whether processors ran
/// on a picture the memory cache had.
@Suite struct SourceLabelTests {
    @Test func aLoaderReportsWhereItsBytesCameFrom() async throws {
        for (origin, expected) in [(LoadOrigin?.none, ImageSource.loader), (.local, .local), (.network, .network)] {
            let loader = HeldLoader { request in
                .success(.data(HeldLoader.fakeData(for: request.url), ResponseMetadata(origin: origin)))
            }
            let pipeline = makePipeline(loader: loader)
            let response = try await pipeline.image(for: ImageRequest(url: testURL(8, 8, 1)))
            #expect(response.source == expected, "origin \(String(describing: origin))")
        }
    }

    @Test func processorsOnAPictureInMemoryAreSaidToHaveRun() async throws {
        let pipeline = makePipeline(loader: HeldLoader.immediate())
        let url = testURL(32, 32, 2)
        #expect(try await pipeline.image(for: ImageRequest(url: url)).source == .network)
        let round = ImageRequest(url: url, processors: [.circle])
        #expect(try await pipeline.image(for: round).source == .processedFromMemory)
        #expect(try await pipeline.image(for: round).source == .memory)
    }

    @Test func bytesThatAreNotAPictureSayWhatTheyLookLike() async throws {
        let page = Data("<!doctype html><html lang=en><body>Sign in".utf8)
        let binary = Data([0x00, 0x00, 0x01, 0xBA, 0x44, 0x00, 0x04, 0x00])
        for (body, shown) in [(page, "\"<!doctype html><…\""), (binary, "00 00 01 BA 44 00 04 00")] {
            let loader = HeldLoader { _ in .success(.data(body, ResponseMetadata())) }
            let pipeline = makePipeline(loader: loader)
            let url = testURL(8, 8, 3)
            let error = try await #require(throws: ImagePipelineError.self) { try await pipeline.image(for: ImageRequest(url: url)) }
            #expect(error.description == "cannot decode \(url.absoluteString): the data is not in any image format known to the pipeline: it starts with \(shown)")
        }
    }

    @Test func leadingBytesSkipAByteOrderMarkAndEscapeControls() {
        #expect(MessageText.leadingBytes(Data([0xEF, 0xBB, 0xBF] + Array("<svg>".utf8))) == "\"<svg>\"")
        #expect(MessageText.leadingBytes(Data("GIF\n\u{1B}".utf8)) == "47 49 46 0A 1B")
        #expect(MessageText.leadingBytes(Data("a\tb\nc".utf8)) == "\"a\\tb\\nc\"")
    }
}
