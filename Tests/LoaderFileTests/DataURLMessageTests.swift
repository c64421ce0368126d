import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 21, finding 5: a failing `data:` URL of a megabyte used to make an error line as long.
@Suite("data: URL failures in messages")
struct DataURLMessageTests {
    @Test func aFailingMegabyteDataURLGivesAShortLineNamingItsSchemeAndLength() async throws {
        let url = try #require(URL(string: "data:image/png;base64," + String(repeating: "!", count: 1_000_000)))
        let pipeline = makePipeline(loader: DataURLLoader(), negativeCacheLifetime: 0)
        do {
            _ = try await pipeline.image(for: ImageRequest(url: url))
            Issue.record("a URL of invalid base64 loaded")
        } catch let error as ImagePipelineError {
            let text = error.description
            #expect(text.count < 400, "\(text.count) characters")
            #expect(text.hasPrefix("cannot load data:image/png;base64,!!!"), "\(text)")
            #expect(text.contains("(1,000,022 characters)") && text.hasSuffix("malformed data: URL: invalid base64 data"), "\(text)")
        }
    }

    @Test func anInvalidMediaTypeIsQuotedEscaped() {
        let text = DataURLError.invalidMediaType("image/\u{1B}[31m" + String(repeating: "x", count: 5_000)).description
        #expect(!hasRawControl(text) && text.contains("image/\\u{1B}[31m"), "\(text)")
        #expect(text.count < 200)
    }
}
