import Foundation
@testable import LoaderHTTP
import PipelineCore
import Testing

@Suite("HTTP freshness metadata")
struct HTTPFreshnessTests {
    let received = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func parsesTheThreeHTTPDateForms() {
        for form in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(HTTPDate.parse(form) == received, "\(form)")
        }
        #expect(HTTPDate.parse("not a date") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
        #expect(HTTPDate.format(received) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 951_782_400)) == "Tue, 29 Feb 2000 00:00:00 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 GMT")
        // Every day for 130 years round-trips through parse.
        for day in stride(from: -3_650, to: 43_800, by: 1) {
            let date = Date(timeIntervalSince1970: TimeInterval(day * 86_400 + 45_296))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
    }

    @Test func maxAgeWinsOverExpiresAndAgeIsSubtracted() {
        let metadata = HTTPResponseHeaders(statusCode: 200, headers: [
            ("Cache-Control", "public, max-age=600, s-maxage=5"), ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT"),
            ("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), ("age", "100"), ("ETag", "\"abc\""),
            ("Last-Modified", "Sat, 05 Nov 1994 08:49:37 GMT"), ("Content-Type", "image/jpeg; charset=binary"),
            ("Content-Length", "1234"),
        ])
        #expect(metadata.maxAge == 600 && metadata.age == 100)
        #expect(metadata.freshUntil(receivedAt: received) == received.addingTimeInterval(500))
        #expect(metadata.etag == "\"abc\"" && metadata.lastModified == "Sat, 05 Nov 1994 08:49:37 GMT")
        #expect(metadata.contentType == "image/jpeg" && metadata.contentLength == 1234)
        #expect(metadata.metadata(receivedAt: received).validator
                == CacheValidator(etag: "\"abc\"", lastModified: "Sat, 05 Nov 1994 08:49:37 GMT"))
        #expect(metadata.metadata(receivedAt: received).freshFor == 500)
    }

    @Test func expiresCountsFromDateAndAnInvalidExpiresIsAlreadyStale() {
        let expires = HTTPResponseHeaders(statusCode: 200, headers: [
            ("Expires", "Sun, 06 Nov 1994 09:49:37 GMT"), ("Date", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ])
        // The server's clock is an hour behind ours: the lifetime (1 h) still counts from receipt.
        let later = received.addingTimeInterval(30)
        #expect(expires.freshUntil(receivedAt: later) == later.addingTimeInterval(3600 - 30))
        let invalid = HTTPResponseHeaders(statusCode: 200, headers: [("Expires", "0")])
        #expect(invalid.freshUntil(receivedAt: received)! < received)
        #expect(HTTPResponseHeaders(statusCode: 200, headers: []).freshUntil(receivedAt: received) == nil)
    }

    @Test func noCacheMeansRevalidateAndNoStoreIsFlagged() {
        let noCache = HTTPResponseHeaders(statusCode: 200, headers: [("cache-control", "no-cache, max-age=3600")])
        #expect(noCache.noCache && noCache.freshUntil(receivedAt: received) == received)
        #expect(!CacheEntryInfo(noCache.metadata(receivedAt: received), receivedAt: received).isFresh(at: received))
        let noStore = HTTPResponseHeaders(statusCode: 200, headers: [("Cache-Control", "no-store")])
        #expect(noStore.noStore)
    }

    /// Headers of a 200 sent at `received` whose picture changed `unchanged` seconds before.
    func lastModifiedOnly(unchanged: TimeInterval, status: Int = 200, _ more: [(String, String)] = []) -> HTTPResponseHeaders {
        HTTPResponseHeaders(statusCode: status, headers: [
            ("Date", HTTPDate.format(received)), ("Last-Modified", HTTPDate.format(received.addingTimeInterval(-unchanged))),
        ] + more)
    }

    @Test func withOnlyLastModifiedATenthOfItsAgeIsFreshCappedAtAWeek() {
        let day: TimeInterval = 86_400
        #expect(lastModifiedOnly(unchanged: 10 * day).freshFor(receivedAt: received) == day)
        #expect(lastModifiedOnly(unchanged: 10 * day).heuristicLifetime(receivedAt: received) == day)
        #expect(lastModifiedOnly(unchanged: 1).freshFor(receivedAt: received) == 0.1)
        #expect(lastModifiedOnly(unchanged: 0).freshFor(receivedAt: received) == 0)
        // Unchanged for 70 days or for ten years: a week (Firefox's cap).
        #expect(HTTPResponseHeaders.heuristicFreshnessCap == 7 * day)
        #expect(lastModifiedOnly(unchanged: 70 * day).freshFor(receivedAt: received) == 7 * day)
        #expect(lastModifiedOnly(unchanged: 3_650 * day).freshFor(receivedAt: received) == 7 * day)
        // The time since Date is subtracted, as for an explicit lifetime; without Date the
        // age of Last-Modified counts to the moment of receipt.
        #expect(lastModifiedOnly(unchanged: 10 * day).freshFor(receivedAt: received.addingTimeInterval(100)) == day - 100)
        let noDate = HTTPResponseHeaders(statusCode: 200, headers: [
            ("Last-Modified", HTTPDate.format(received.addingTimeInterval(-20 * day))),
        ])
        #expect(noDate.freshFor(receivedAt: received) == 2 * day)
        // 203 is kept by the loader too; other statuses get no heuristic.
        #expect(lastModifiedOnly(unchanged: 10 * day, status: 203).freshFor(receivedAt: received) == day)
        #expect(lastModifiedOnly(unchanged: 10 * day, status: 206).freshFor(receivedAt: received) == nil)
        #expect(lastModifiedOnly(unchanged: 10 * day).metadata(receivedAt: received).freshFor == day)
    }

    @Test func theHeuristicNeverOverridesWhatTheResponseSays() {
        let tenDays: TimeInterval = 10 * 86_400
        // An explicit lifetime wins, however short: max-age=0 and no-cache mean "ask every time".
        #expect(lastModifiedOnly(unchanged: tenDays, [("Cache-Control", "max-age=0")]).freshFor(receivedAt: received) == 0)
        #expect(lastModifiedOnly(unchanged: tenDays, [("Cache-Control", "max-age=60")]).freshFor(receivedAt: received) == 60)
        #expect(lastModifiedOnly(unchanged: tenDays, [("Cache-Control", "no-cache")]).freshFor(receivedAt: received) == 0)
        let expires = HTTPDate.format(received.addingTimeInterval(30))
        #expect(lastModifiedOnly(unchanged: tenDays, [("Expires", expires)]).freshFor(receivedAt: received) == 30)
        #expect(lastModifiedOnly(unchanged: tenDays, [("Expires", "0")]).freshFor(receivedAt: received)! < 0)
        // No-store and must-revalidate (as Chromium) get no heuristic lifetime.
        let noStore = lastModifiedOnly(unchanged: tenDays, [("Cache-Control", "no-store")])
        #expect(noStore.freshFor(receivedAt: received) == nil && noStore.metadata(receivedAt: received).noStore)
        let mustRevalidate = lastModifiedOnly(unchanged: tenDays, [("Cache-Control", "must-revalidate")])
        #expect(mustRevalidate.mustRevalidate && mustRevalidate.freshFor(receivedAt: received) == nil)
        // A Last-Modified later than Date, or unreadable, is no basis for a guess.
        #expect(lastModifiedOnly(unchanged: -60).freshFor(receivedAt: received) == nil)
        let unreadable = HTTPResponseHeaders(statusCode: 200, headers: [("Date", HTTPDate.format(received)),
                                                                         ("Last-Modified", "yesterday")])
        #expect(unreadable.freshFor(receivedAt: received) == nil)
    }

    @Test func retryAfterAcceptsSecondsOrADate() {
        #expect(HTTPResponseHeaders(statusCode: 429, headers: [("Retry-After", "7")]).retryAfter == 7)
        let inAMinute = HTTPDate.format(Date().addingTimeInterval(60))
        let fromDate = HTTPResponseHeaders(statusCode: 503, headers: [("Retry-After", inAMinute)]).retryAfter ?? 0
        #expect(fromDate > 50 && fromDate <= 60)
    }

    /// RFC 9111 §4.3.4: a bare 304 updates the stored response, whose own `no-cache` or
    /// `max-age` still applies; only a stored response that stated no lifetime gets the
    /// heuristic again.
    @Test func aBare304GuessesOnlyForAStoredResponseThatStatedNoLifetime() throws {
        let yearOld = HTTPDate.format(received.addingTimeInterval(-365 * 86_400))
        let date = ("Date", HTTPDate.format(received))
        let guessed = HTTPResponseHeaders(statusCode: 200, headers: [date, ("Last-Modified", yearOld)]).metadata(receivedAt: received)
        let stated = HTTPResponseHeaders(statusCode: 200, headers: [date, ("Last-Modified", yearOld), ("Cache-Control", "no-cache")])
            .metadata(receivedAt: received)
        #expect(guessed.lifetimeIsHeuristic && guessed.freshFor == HTTPResponseHeaders.heuristicFreshnessCap)
        #expect(!stated.lifetimeIsHeuristic && stated.freshFor == 0)

        let bare = HTTPResponseHeaders(statusCode: 304, headers: [date])
        let storedGuess = try #require(CacheValidator(etag: nil, lastModified: yearOld, allowsHeuristicLifetime: true))
        let afterGuess = bare.updatingStoredResponse(storedGuess)
        #expect(afterGuess.metadata(receivedAt: received).freshFor == HTTPResponseHeaders.heuristicFreshnessCap)
        let afterNoCache = bare.updatingStoredResponse(try #require(stated.validator))
        #expect(afterNoCache.metadata(receivedAt: received).freshFor == nil)  // stale: asked again next time
        #expect(!afterNoCache.metadata(receivedAt: received).lifetimeIsHeuristic)
    }
}
