#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An error that tells the pipeline whether asking again soon can help. Loaders and decoders
/// may throw error types of their own; those that conform are negatively cached like a 404
/// when ``isPermanent`` is `true` (for ``ImagePipeline/Configuration/negativeCacheLifetime``).
/// An error that does not conform is taken as temporary.
public protocol PipelineFailure: Error {
    /// `true` when the same request would fail the same way for a while (not found,
    /// undecodable bytes); `false` for a timeout or a dropped connection.
    var isPermanent: Bool { get }

    /// What kind of failure this is (``ImagePipelineError/Kind``: not found, refused, over a
    /// limit, not a picture…), so that ``ImagePipelineError/kind`` sees through the pipeline's
    /// wrapper; `nil` (the default) when none fits, and the pipeline decides by where the error
    /// came from (a loader's is ``ImagePipelineError/Kind/unavailable``, a decoder's
    /// ``ImagePipelineError/Kind/notAPicture``).
    var failureKind: ImagePipelineError.Kind? { get }
}

extension PipelineFailure {
    /// `nil`: the pipeline decides by where the error came from.
    public var failureKind: ImagePipelineError.Kind? { nil }
}

/// The pipeline's failures, and the error vocabulary that loaders and codecs share.
///
/// What reaches a caller of ``ImagePipeline/image(for:)`` names the URL it asked for: a
/// loader's error arrives wrapped in ``loadingFailed(_:underlying:)``, a decoder's in
/// ``decodingFailed(_:underlying:)``, the loader's or decoder's own error (of any type)
/// unchanged inside — inside the failure of the fetch URL, when the URL builder picked another
/// (the message names both). ``underlyingError`` unwraps; ``kind`` says what kind of failure it
/// is through every wrapper (`if case .notFound = error.kind`), and `Kind(error)` for any error,
/// a `CancellationError` included.
public enum ImagePipelineError: Error, Sendable, CustomStringConvertible, LocalizedError, PipelineFailure, Equatable {
    /// No loader is registered for the URL's scheme.
    case noLoader(scheme: String)
    /// No registered decoder accepts the data; `format` is what the bytes look like, if known,
    /// and `leadingBytes` their first bytes (up to ``ImageFormat/sniffLength``), so the message
    /// can say what they are when no format matched (`starts with "<!doctype html>"`).
    case noDecoder(format: ImageFormat?, leadingBytes: Data = Data())
    /// The source has no such resource (HTTP 404 or 410, a missing file, an unknown asset);
    /// `status` is the HTTP status when the loader speaks HTTP.
    case notFound(URL, status: Int? = nil)
    /// The body ended before its announced length.
    case truncated(expected: Int64?, received: Int64)
    /// The body is larger than the configured maximum, in bytes.
    case tooLarge(limit: Int64, actual: Int64?)
    /// The data is of a kind the codec does not support (e.g. 12-bit JPEG), with the reason.
    case unsupported(format: ImageFormat, message: String)
    /// The codec could not decode the data, with its message.
    case corruptData(format: ImageFormat?, message: String)
    /// The data ends before the picture does (a file cut short, not a body shorter than its
    /// announced length: that is ``truncated(expected:received:)``), with the codec's message:
    /// thrown when the request's ``DecodingStrictness`` refuses a
    /// ``DecodeIssue/Severity/truncated`` issue, or by a codec that cannot decode a partial
    /// file at all. Not permanent: the next fetch may bring the whole file.
    case truncatedData(format: ImageFormat?, message: String)
    /// The header declares more pixels than the configured maximum.
    case tooManyPixels(PixelSize, limit: Int)
    /// The source would cost more than one of the limits on a source other than pixels and
    /// body bytes (``Limit``): `actual` is what was counted when the decoder stopped, at
    /// least `limit + 1` when it stopped counting there, or `nil` when it is not known.
    case overLimit(Limit, limit: Int, actual: Int?)
    /// A connect, idle or total timeout, with what timed out.
    case timeout(String)
    /// The pipeline or the loader of `URL` refused the request because it is at one of its load
    /// limits (``Limit``: the pipeline's requests in flight hold their memory budget; the
    /// loader's queue is full, the request's deadline passed while it waited for a connection,
    /// its downloads hold their memory budget): "try again later", not a failure of the origin,
    /// which may never have been asked. `detail` says what was counted. Never
    /// permanent (not negatively cached); a loader does not retry it itself.
    case overloaded(URL, limit: Limit, detail: String)
    /// The codec's library, opened on first use, is not installed (or not the version this
    /// was built against): ``MissingLibrary`` names it and the package to install.
    case libraryUnavailable(MissingLibrary)
    /// A local file could not be read: a directory, not permitted, not a regular file.
    case fileUnreadable(path: String, reason: String)
    /// The request asked for cached data only and there was none.
    case notCached
    /// The loader reported "not modified" for a request that had no cached copy to keep.
    case unexpectedNotModified
    /// Loading `URL` failed; `underlying` is what the loader threw, unchanged.
    case loadingFailed(URL, underlying: any Error & Sendable)
    /// Decoding the bytes of `URL` failed; `underlying` is what the decoder threw, unchanged.
    case decodingFailed(URL, underlying: any Error & Sendable)
    /// A processor (``ImageProcessing``) failed on the picture from `URL`; `underlying` is what
    /// it threw, unchanged.
    case processingFailed(URL, underlying: any Error & Sendable)

    /// The loader's or decoder's own error inside ``loadingFailed(_:underlying:)`` and
    /// ``decodingFailed(_:underlying:)`` (unwrapped all the way); `self` otherwise.
    public var underlyingError: any Error & Sendable {
        switch self {
        case .loadingFailed(_, let error), .decodingFailed(_, let error), .processingFailed(_, let error):
            return (error as? ImagePipelineError)?.underlyingError ?? error
        default:
            return self
        }
    }

    /// `true` for ``loadingFailed(_:underlying:)`` and ``decodingFailed(_:underlying:)``.
    public var isWrapped: Bool {
        switch self {
        case .loadingFailed, .decodingFailed, .processingFailed: return true
        default: return false
        }
    }

    /// The URL a wrapped failure names, if any.
    public var url: URL? {
        switch self {
        case .loadingFailed(let url, _), .decodingFailed(let url, _), .processingFailed(let url, _), .notFound(let url, _),
             .overloaded(let url, _, _):
            return url
        default: return nil
        }
    }

    /// `true` for failures that will not go away by asking again soon (not found, undecodable
    /// bytes): the pipeline keeps these in its short negative cache. A wrapped error answers
    /// for itself through ``PipelineFailure`` (temporary when it does not conform).
    public var isPermanent: Bool {
        switch self {
        case .notFound, .noDecoder, .unsupported, .corruptData, .tooManyPixels, .overLimit, .libraryUnavailable: return true
        case .loadingFailed(_, let error), .decodingFailed(_, let error), .processingFailed(_, let error):
            return (error as? any PipelineFailure)?.isPermanent ?? false
        default: return false
        }
    }

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .noLoader(let scheme):
            return "no data loader is registered for the URL scheme '\(MessageText.escaped(scheme, limit: 64))'"
        case .noDecoder(let format?, _):
            let hint = format.registrationHint.map { ": \($0)" } ?? ""
            return "\(format) data, but no \(format) decoder is registered\(hint)"
        case .noDecoder(nil, let bytes):
            guard !bytes.isEmpty else { return "the data is not in any image format known to the pipeline" }
            return "the data is not in any image format known to the pipeline: it starts with \(MessageText.leadingBytes(bytes))"
        case .notFound(let url, let status): return Self.notFound(url, status: status, fetchedAs: nil)
        case .truncated(let expected?, let received): return "the body ended after \(received) of \(expected) bytes"
        case .truncated(nil, let received): return "the body ended early, after \(received) bytes"
        case .tooLarge(let limit, let actual?): return "the body is \(actual) bytes, over the limit of \(limit)"
        case .tooLarge(let limit, nil): return "the body is over the limit of \(limit) bytes"
        case .unsupported(let format, let message): return "unsupported \(format) data: \(MessageText.escaped(message))"
        case .corruptData(let format?, let message): return "corrupt \(format) data: \(MessageText.escaped(message))"
        case .corruptData(nil, let message): return "corrupt data: \(MessageText.escaped(message))"
        case .truncatedData(let format?, let message): return "truncated \(format) data: \(MessageText.escaped(message))"
        case .truncatedData(nil, let message): return "truncated data: \(MessageText.escaped(message))"
        case .tooManyPixels(let size, let limit): return "the picture is \(size) pixels, over the limit of \(limit) pixels"
        case .overLimit(let kind, let limit, let actual?): return "\(kind.counting) is \(actual), over the limit of \(limit)"
        case .overLimit(let kind, let limit, nil): return "\(kind.counting) is over the limit of \(limit)"
        case .timeout(let what): return "timed out: \(MessageText.escaped(what))"
        case .overloaded(let url, let limit, let detail): return Self.overloaded(url, limit: limit, detail: detail, fetchedAs: nil)
        case .fileUnreadable(let path, let reason):
            return "cannot read \(MessageText.escaped(path, limit: MessageText.urlLimit)): \(MessageText.escaped(reason))"
        case .libraryUnavailable(let missing): return missing.description
        case .notCached: return "the picture is not cached and the request does not allow loading"
        case .unexpectedNotModified: return "the loader answered 'not modified' but nothing was cached"
        case .loadingFailed(let url, let error): return Self.wrapped("load", url, error)
        case .decodingFailed(let url, let error): return Self.wrapped("decode", url, error)
        case .processingFailed(let url, let error): return Self.wrapped("process", url, error)
        }
    }

    /// "cannot load URL: what went wrong". A failure addressed to the URL asked for
    /// (``addressed(to:)``) has the fetch URL's failure inside: its URL is named as "fetched as".
    /// An ``ImagePipelineError`` inside for the same URL describes itself, so a URL is named once.
    private static func wrapped(_ verb: String, _ url: URL, _ error: any Error) -> String {
        var error = error, fetched: URL?
        if let inner = error as? ImagePipelineError, inner.isWrapped, let innerURL = inner.url, innerURL != url {
            switch inner {
            case .loadingFailed(_, let underlying), .decodingFailed(_, let underlying), .processingFailed(_, let underlying):
                (error, fetched) = (underlying, innerURL)
            default: break
            }
        }
        if let inner = error as? ImagePipelineError, inner.url == (fetched ?? url) {
            if case .notFound(_, let status) = inner { return notFound(url, status: status, fetchedAs: fetched) }
            if case .overloaded(_, let limit, let detail) = inner { return overloaded(url, limit: limit, detail: detail, fetchedAs: fetched) }
            if fetched == nil { return inner.description }
        }
        let via = fetched.map { " (fetched as \(name($0)))" } ?? ""
        return "cannot \(verb) \(name(url))\(via): \(text(of: error))"
    }

    /// "URL was not found (HTTP 404; fetched as …)".
    private static func notFound(_ url: URL, status: Int?, fetchedAs fetched: URL?) -> String {
        let notes = [status.map { "HTTP \($0)" }, fetched.map { "fetched as \(name($0))" }].compactMap { $0 }
        return "\(name(url)) was not found" + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")
    }

    /// "URL was not loaded (fetched as …), overloaded (limit): detail; try again later".
    private static func overloaded(_ url: URL, limit: Limit, detail: String, fetchedAs fetched: URL?) -> String {
        let via = fetched.map { " (fetched as \(name($0)))" } ?? ""
        return "\(name(url)) was not loaded\(via), overloaded (\(MessageText.escaped(limit.rawValue, limit: 64))): "
            + "\(MessageText.escaped(detail)); try again later"
    }

    /// ``description``, for `localizedDescription`.
    public var errorDescription: String? { description }

    /// Wrapped errors compare by case and URL, and their underlying errors by value when
    /// those are `Equatable` (else by description); every other case by its values.
    public static func == (lhs: ImagePipelineError, rhs: ImagePipelineError) -> Bool {
        switch (lhs, rhs) {
        case (.noLoader(let a), .noLoader(let b)): return a == b
        case (.noDecoder(let a1, let a2), .noDecoder(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.notFound(let a1, let a2), .notFound(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.truncated(let a1, let a2), .truncated(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.tooLarge(let a1, let a2), .tooLarge(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.unsupported(let a1, let a2), .unsupported(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.corruptData(let a1, let a2), .corruptData(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.truncatedData(let a1, let a2), .truncatedData(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.tooManyPixels(let a1, let a2), .tooManyPixels(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.overLimit(let a1, let a2, let a3), .overLimit(let b1, let b2, let b3)): return a1 == b1 && a2 == b2 && a3 == b3
        case (.timeout(let a), .timeout(let b)): return a == b
        case (.overloaded(let a1, let a2, let a3), .overloaded(let b1, let b2, let b3)): return a1 == b1 && a2 == b2 && a3 == b3
        case (.fileUnreadable(let a1, let a2), .fileUnreadable(let b1, let b2)): return a1 == b1 && a2 == b2
        case (.libraryUnavailable(let a), .libraryUnavailable(let b)): return a == b
        case (.notCached, .notCached), (.unexpectedNotModified, .unexpectedNotModified): return true
        case (.loadingFailed(let a1, let a2), .loadingFailed(let b1, let b2)),
             (.decodingFailed(let a1, let a2), .decodingFailed(let b1, let b2)),
             (.processingFailed(let a1, let a2), .processingFailed(let b1, let b2)):
            return a1 == b1 && equalErrors(a2, b2)
        default: return false
        }
    }

    /// The URL as a person reads it: a file's path, else the absolute string, shortened and
    /// escaped (``MessageText/url(_:limit:)``).
    static func name(_ url: URL) -> String { MessageText.url(url) }

    /// The most characters of a wrapped error's own text a description shows: room for a URL
    /// and a message of their default bounds (``MessageText/urlLimit``,
    /// ``MessageText/textLimit``) and the words around them.
    static let underlyingTextLimit = 1_000

    /// An error's one-line text: `LocalizedError`'s description, else `String(describing:)`,
    /// escaped and bounded (``MessageText/escaped(_:limit:)``): a third-party loader's or
    /// decoder's error may carry outside text of its own.
    static func text(of error: any Error) -> String {
        let text: String
        if let localized = error as? any LocalizedError, let description = localized.errorDescription {
            text = description
        } else {
            text = String(describing: error)
        }
        return MessageText.escaped(text, limit: underlyingTextLimit)
    }

    /// Whether two underlying errors are the same: by `==` when the first is `Equatable`, else
    /// by type and description.
    private static func equalErrors(_ a: any Error, _ b: any Error) -> Bool {
        func open<T: Equatable>(_ a: T, _ b: any Error) -> Bool { ((b as Any) as? T) == a }
        let boxed: Any = a
        if let equatable = boxed as? any Equatable { return open(equatable, b) }
        return type(of: a) == type(of: b) && String(describing: a) == String(describing: b)
    }
}

extension ImagePipelineError {
    /// A loader's error as callers see it: wrapped with the URL
    /// (``ImagePipelineError/loadingFailed(_:underlying:)``), unless it already is.
    static func wrap(_ error: any Error, loading url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .loadingFailed(url, underlying: error)
    }

    /// As ``wrap(_:loading:)``, for a processor's error.
    static func wrap(_ error: any Error, processing url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .processingFailed(url, underlying: error)
    }

    /// This failure as the caller who asked for `asked` sees it: a wrapped failure of the URL the
    /// URL builder fetched instead (`…/a.png?w=320` for `…/a.png`) is wrapped once more, in the
    /// same case, with `asked`; its description names the URL asked for and the one fetched.
    func addressed(to asked: URL) -> ImagePipelineError {
        guard let url, url != asked else { return self }
        switch self {
        case .loadingFailed: return .loadingFailed(asked, underlying: self)
        case .decodingFailed: return .decodingFailed(asked, underlying: self)
        case .processingFailed: return .processingFailed(asked, underlying: self)
        default: return self
        }
    }

    /// As ``wrap(_:loading:)``, for a decoder's error.
    static func wrap(_ error: any Error, decoding url: URL) -> ImagePipelineError {
        if let own = error as? ImagePipelineError, own.isWrapped { return own }
        return .decodingFailed(url, underlying: quotable(error, from: url))
    }

    /// Schemes whose bytes are on this machine: a message never quotes them (a server's client
    /// would read a file's first bytes back through the error).
    static let localSchemes: Set<String> = ["file", "data", "local"]

    /// `error`, without the leading bytes ``noDecoder(format:leadingBytes:)`` quotes when `url`
    /// names a source on this machine (``localSchemes``): only a body that came over the
    /// network is described by its bytes.
    static func quotable(_ error: any Error, from url: URL) -> any Error {
        guard case .noDecoder(nil, let bytes)? = error as? ImagePipelineError, !bytes.isEmpty,
              localSchemes.contains(url.scheme?.lowercased() ?? "") else { return error }
        return ImagePipelineError.noDecoder(format: nil, leadingBytes: Data())
    }
}
