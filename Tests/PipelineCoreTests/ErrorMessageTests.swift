import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 21, finding 5: the text of an error that names outside text (a URL, a file's path, a
/// codec's message) is bounded, and control characters in it arrive escaped.
@Suite("error messages with outside text")
struct ErrorMessageTests {
    /// A 13 MB `data:` URL used to make a 13 MB line; a 1 MB one now gives a line that still
    /// names the scheme, the start of the URL and its length.
    @Test func aHugeDataURLIsNamedByItsStartAndLength() throws {
        let url = try #require(URL(string: "data:image/png;base64," + String(repeating: "A", count: 1_000_000)))
        let error = ImagePipelineError.loadingFailed(url, underlying: ImagePipelineError.tooLarge(limit: 10, actual: 750_000))
        let text = error.description
        #expect(text.count < 400, "\(text.count) characters")
        #expect(text.hasPrefix("cannot load data:image/png;base64,AAAA"), "\(text)")
        #expect(text.contains("(1,000,022 characters)"), "\(text)")
        #expect(text.hasSuffix("the body is 750000 bytes, over the limit of 10"), "\(text)")
        #expect(ImagePipelineError.notFound(url).description.count < 250)
        #expect(error.url == url)  // the value keeps the whole URL
    }

    @Test func aLongHTTPURLKeepsItsHostAndPort() throws {
        let url = try #require(URL(string: "https://images.example.com:8443/" + String(repeating: "p", count: 5_000) + ".jpg"))
        let text = ImagePipelineError.decodingFailed(url, underlying: ImagePipelineError.noDecoder(format: nil)).description
        #expect(text.hasPrefix("cannot decode https://images.example.com:8443/ppp"), "\(text)")
        #expect(text.contains("(5,036 characters)") && text.count < 400, "\(text)")
    }

    /// The terminal title and colour sequences of a hostile codec message or file name.
    @Test func controlCharactersInACodecMessageOrPathAreEscaped() throws {
        let hostile = "x\u{1B}]0;TITLE\u{07}\u{1B}[31mRED\u{9B}2J\u{202E}gnp.exe"
        let errors: [ImagePipelineError] = [
            .corruptData(format: .png, message: hostile),
            .corruptData(format: nil, message: hostile),
            .unsupported(format: .jpeg, message: hostile),
            .timeout(hostile),
            .fileUnreadable(path: "/tmp/" + hostile, reason: hostile),
            .notFound(URL(fileURLWithPath: "/tmp/" + hostile)),
            .loadingFailed(URL(fileURLWithPath: "/tmp/" + hostile), underlying: ForeignError(text: hostile)),
            .noLoader(scheme: hostile),
        ]
        for error in errors {
            let text = error.description
            #expect(!hasRawControl(text), "\(text.debugDescription)")
            #expect(text.contains("x\\u{1B}]0;TITLE\\u{07}\\u{1B}[31mRED\\u{9B}2J\\u{202E}gnp.exe"), "\(text)")
        }
    }

    /// An unbounded message from a codec is cut, with its length.
    @Test func aHugeCodecMessageIsBounded() {
        let text = ImagePipelineError.corruptData(format: .gif, message: String(repeating: "z", count: 200_000)).description
        #expect(text.count < 500 && text.hasSuffix("… (200,000 characters)"), "\(text.count)")
    }

    /// A third-party loader's error of its own type, with outside text in its description.
    struct ForeignError: Error, CustomStringConvertible {
        let text: String
        var description: String { "the vendor said: \(text)" }
    }
}
