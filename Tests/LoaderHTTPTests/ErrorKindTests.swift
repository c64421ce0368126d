import CodecPNG
import Foundation
import LoaderFile
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// What a caller catches from `pipeline.image(for:)` for `url`, unwrapped by nothing.
private func caught(_ url: URL, from pipeline: ImagePipeline) async -> (any Error)? {
    if case .failure(let error) = await Result({ _ = try await pipeline.image(for: ImageRequest(url: url)) }) { return error }
    return nil
}

/// A pipeline over `loader` with the fixture server's decoders (PNG and the test format) and no
/// negative cache.
private func pipeline(_ loader: any DataLoading, maxPixelCount: Int = 100_000_000) -> ImagePipeline {
    makePipeline(loader: loader, decoders: fixtureDecoders, maxPixelCount: maxPixelCount, negativeCacheLifetime: 0)
}

/// Failures from real loaders and decoders, each matched the way a new user tries first: one
/// `if case`/`switch` on ``ImagePipelineError/kind`` (or `Kind(error)` for any error), no
/// unwrapping. The errors keep their wrapped shape (``ImagePipelineError/underlyingError``).
@Suite("Error kinds through real loaders", .timeLimit(.minutes(2)))
struct ErrorKindTests {
    @Test("an HTTP 404 or 410 is .notFound", arguments: ["/status/404", "/status/410"])
    func httpNotFound(_ path: String) async throws {
        // A server of its own: LoaderErrorTests counts the shared server's hits of these paths.
        try await withFixtureServer { server in
            let url = server.url(path)
            let error = try #require(await caught(url, from: pipeline(HTTPDataLoader())) as? ImagePipelineError)
            #expect({ if case .notFound = error.kind { true } else { false } }(), "\(error)")
            #expect(error.url == url)
            guard case .loadingFailed(_, let underlying as ImagePipelineError) = error, case .notFound = underlying else {
                Issue.record("the loader's error is no longer inside: \(error)")
                return
            }
            #expect(error.kind.httpStatus == 404)
        }
    }

    @Test func aMissingFileIsNotFound() async throws {
        try await withTemporaryDirectory(prefix: "ErrorKindTests") { directory in
            let url = directory.appendingPathComponent("missing.png")
            let error = try #require(await caught(url, from: pipeline(FileDataLoader())) as? ImagePipelineError)
            #expect(error.kind == .notFound, "\(error)")
            #expect(error.url == url)
            // Foundation's own error for the same file, as a custom loader would throw it.
            #expect(ImagePipelineError.Kind(try #require(Result(catching: { try Data(contentsOf: url) }).failure)) == .notFound)
        }
    }

    @Test func aPublicOnlyLoaderAskedForLoopbackIsRefused() async throws {
        let server = try await SharedFixtureServer.instance.server()
        let url = server.url("/image/errorkind-refused")
        let loader = HTTPDataLoader(configuration: .init(connectionPolicy: .publicOnly))
        let error = try #require(await caught(url, from: pipeline(loader)) as? ImagePipelineError)
        #expect(error.kind == .refused, "\(error)")
        #expect(error.underlyingError is HTTPError)
        #expect(try await server.hits("/image/errorkind-refused") == 0)
    }

    @Test func anOrigin403AndAnUnknownSchemeAreRefused() async throws {
        try await withFixtureServer { server in  // its own: LoaderErrorTests counts the shared server's 403s
            let forbidden = try #require(await caught(server.url("/status/403"), from: pipeline(HTTPDataLoader())))
            #expect(ImagePipelineError.Kind(forbidden) == .refused, "\(forbidden)")
        }
        let noLoader = try #require(await caught(URL(string: "ftp://127.0.0.1/a.png")!, from: pipeline(HTTPDataLoader())))
        #expect(ImagePipelineError.Kind(noLoader) == .refused, "\(noLoader)")
    }

    /// A PNG whose header says 65,535 × 65,535, read from a file: refused by the pixel limit.
    @Test func aPixelBombIsOverLimit() async throws {
        var bytes = [UInt8](try PNGEncoder().encode(Bitmap(zeroed: PixelSize(width: 4, height: 4))))
        for i in 16..<24 { bytes[i] = i % 4 < 2 ? 0 : 0xFF }  // IHDR width, height = 0x0000FFFF
        let crc = CRC32.checksum(bytes[12..<29])
        for k in 0..<4 { bytes[29 + k] = UInt8(truncatingIfNeeded: crc >> (24 - 8 * k)) }
        try await withTemporaryDirectory(prefix: "ErrorKindTests") { directory in
            let url = directory.appendingPathComponent("bomb.png")
            try Data(bytes).write(to: url)
            let error = try #require(await caught(url, from: pipeline(FileDataLoader(), maxPixelCount: 1_000_000)) as? ImagePipelineError)
            switch error.kind {
            case .overLimit: break
            default: Issue.record("got \(error.kind): \(error)")
            }
            guard case .decodingFailed(url, let inner) = error, case .tooManyPixels? = inner as? ImagePipelineError else {
                Issue.record("the decoder's error is no longer inside: \(error)")
                return
            }
        }
    }

    @Test func aBodyOverTheByteLimitIsOverLimit() async throws {
        let server = try await SharedFixtureServer.instance.server()
        let loader = HTTPDataLoader(configuration: .init(maxBodyBytes: 100_000, maxRetries: 0))
        let error = try #require(await caught(server.url("/huge/errorkind"), from: pipeline(loader)) as? ImagePipelineError)
        #expect(error.kind == .overLimit, "\(error)")
        #expect(error.kind.httpStatus == 413)
    }

    @Test("HTML, junk that sniffs as PNG and text are .notAPicture", arguments: ["/html/errorkind", "/pngjunk/errorkind"])
    func httpBytesThatAreNotAPicture(_ path: String) async throws {
        let server = try await SharedFixtureServer.instance.server()
        let error = try #require(await caught(server.url(path), from: pipeline(HTTPDataLoader())) as? ImagePipelineError)
        #expect(error.kind == .notAPicture, "\(error)")
    }

    @Test func aTextFileIsNotAPicture() async throws {
        try await withTemporaryDirectory(prefix: "ErrorKindTests") { directory in
            let url = directory.appendingPathComponent("notes.png")
            try Data("these are notes, not a picture\n".utf8).write(to: url)
            let error = try #require(await caught(url, from: pipeline(FileDataLoader())) as? ImagePipelineError)
            #expect(error.kind == .notAPicture, "\(error)")
            guard case .noDecoder = error.underlyingError as? ImagePipelineError else {
                Issue.record("got \(error)")
                return
            }
        }
    }

    /// A task cancelled while the server holds its answer gets `CancellationError`, which
    /// `Kind(error)` calls `.cancelled`.
    @Test func aCancelledTaskIsCancelled() async throws {
        let server = try await SharedFixtureServer.instance.server()
        let name = "errorkind-\(UUID().uuidString)"
        let pipeline = pipeline(HTTPDataLoader(configuration: .init(maxRetries: 0)))
        let task = Task { try await pipeline.image(for: ImageRequest(url: server.url("/hold/\(name)"))) }
        _ = try await eventually(timeout: 60) { try await server.hits("/hold/\(name)") >= 1 }
        task.cancel()
        let result = await task.result
        try await server.release(name)
        let error = try #require(result.failure)
        #expect(ImagePipelineError.Kind(error) == .cancelled, "\(error)")
        #expect(ImagePipelineError.Kind(error).httpStatus == 499)
    }

    @Test func statusesAndKindsMapBothWays() {
        #expect(ImagePipelineError.Kind(httpStatus: 404) == .notFound)
        #expect(ImagePipelineError.Kind(httpStatus: 451) == .refused)
        #expect(ImagePipelineError.Kind(httpStatus: 503) == .overloaded)
        #expect(ImagePipelineError.Kind(httpStatus: 500) == nil)
        #expect(ImagePipelineError.Kind.allCases.map(\.httpStatus) == [404, 403, 413, 422, 499, 503, 504, 504, 502, 500])
        #expect(ImagePipelineError.Kind.allCases.map(\.httpStatus) == ImagePipelineError.Kind.allCases.map { kind in
            documentedStatus(for: kind == .cancelled ? CancellationError() : ImagePipelineError.kindExample(kind))
        }, "the documented function (ErrorStatusExample.swift) and Kind.httpStatus agree")
        for kind in ImagePipelineError.Kind.allCases where kind != .notAPicture && kind != .cancelled && kind != .unavailable
            && kind != .failed && kind != .notCached {
            #expect(ImagePipelineError.Kind(httpStatus: kind.httpStatus) == kind, "\(kind)")
        }
        #expect(ImagePipelineError.Kind(HTTPError.badStatus(code: 500)) == .failed, "an HTTP error alone is not known")
        #expect(ImagePipelineError.loadingFailed(URL(string: "http://a/b")!, underlying: HTTPError.badStatus(code: 500)).kind == .unavailable)
        #expect(ImagePipelineError.Kind(CancellationError()) == .cancelled)
        #expect(ImagePipelineError.Kind(DataURLError.invalidBase64) == .notAPicture)
    }
}

extension Result {
    /// The error, or `nil` for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension ImagePipelineError {
    /// An error of `kind` (not `.cancelled`: that is `CancellationError`).
    fileprivate static func kindExample(_ kind: Kind) -> ImagePipelineError {
        let url = URL(string: "https://cdn.example/a.png")!
        switch kind {
        case .notFound: return .notFound(url, status: 404)
        case .refused: return .noLoader(scheme: "ftp")
        case .overLimit: return .tooManyPixels(PixelSize(width: 60_000, height: 60_000), limit: 1_000_000)
        case .notAPicture: return .noDecoder(format: nil)
        case .overloaded: return .overloaded(url, limit: .queuedRequests, detail: "full")
        case .timedOut: return .timeout("idle")
        case .notCached: return .notCached
        case .unavailable: return .truncated(expected: 10, received: 5)
        case .cancelled, .failed: return .unexpectedNotModified
        }
    }
}
