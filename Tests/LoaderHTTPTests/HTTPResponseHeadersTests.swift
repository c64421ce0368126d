import Foundation
import LoaderHTTP
import PipelineCore
import Testing

/// The header parsing every HTTP response goes through (and the date fast path the loader
/// relies on for speed).
@Suite("HTTPResponseHeaders and HTTPDate")
struct ResponseMetadataTests {
    @Test(arguments: ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"])
    func allThreeDateFormsParseToTheSameInstant(_ text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test func datesRoundTripAcrossLeapYearsAndCenturies() {
        for seconds in [0, 951_782_400, 4_107_542_399, 1_709_210_096, -2_208_988_800] {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date, "\(HTTPDate.format(date))")
        }
    }

    @Test(arguments: ["", "yesterday", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                      "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT"])
    func malformedDatesAreRejected(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func headersAreReadCaseInsensitivelyWithOptionalWhitespace() {
        let metadata = HTTPResponseHeaders(statusCode: 200, headers: [
            ("content-TYPE", " Image/JPEG ; charset=binary"), ("ETag", "\t\"abc\" "), ("Content-Length", "1234"),
            ("Cache-Control", "public, max-age=\"600\""), ("cache-control", " no-cache"), ("Age", "30"),
            ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"), ("Retry-After", "120"),
        ])
        #expect(metadata.contentType == "image/jpeg")
        #expect(metadata.etag == "\"abc\"")
        #expect(metadata.contentLength == 1234)
        #expect(metadata.maxAge == 600)
        #expect(metadata.noCache)
        #expect(!metadata.noStore)
        #expect(metadata.age == 30)
        #expect(metadata.lastModified == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(metadata.retryAfter == 120)
    }

    @Test func freshnessUsesExpiresMinusDateWithoutMaxAge() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        let metadata = HTTPResponseHeaders(statusCode: 200, headers: [
            ("Date", HTTPDate.format(date)), ("Expires", HTTPDate.format(date.addingTimeInterval(3600))),
        ])
        #expect(metadata.freshUntil(receivedAt: date) == date.addingTimeInterval(3600))
        let invalid = HTTPResponseHeaders(statusCode: 200, headers: [("Expires", "0")])
        #expect(invalid.freshUntil(receivedAt: date).map { $0 <= date } == true)
    }
}
