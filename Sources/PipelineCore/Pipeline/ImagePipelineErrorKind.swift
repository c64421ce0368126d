#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ImagePipelineError {
    /// What kind of failure an error is, whatever wrapped it: the one thing to switch on.
    ///
    /// A 404 arrives as ``ImagePipelineError/loadingFailed(_:underlying:)`` with the loader's
    /// ``ImagePipelineError/notFound(_:status:)`` inside, a pixel bomb as
    /// ``ImagePipelineError/decodingFailed(_:underlying:)`` with
    /// ``ImagePipelineError/tooManyPixels(_:limit:)`` inside; their ``ImagePipelineError/kind``
    /// is ``notFound`` and ``overLimit``. `Kind(error)` classifies any error, a
    /// `CancellationError` included:
    ///
    /// ```swift
    /// do {
    ///     return try await pipeline.image(for: request)
    /// } catch {
    ///     switch ImagePipelineError.Kind(error) {
    ///     case .notFound: …             // HTTP 404 or 410, a missing file
    ///     case .refused: …              // ConnectionPolicy, no loader for the scheme
    ///     case .overLimit: …            // too many pixels, too many bytes
    ///     case .notAPicture: …          // HTML, junk, a format nothing decodes
    ///     case .cancelled: return nil
    ///     default: …
    ///     }
    /// }
    /// ```
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// The source has no such resource: HTTP 404 or 410, a missing file, a custom loader's
        /// missing asset.
        case notFound
        /// Refused before or instead of loading: the HTTP loader's `ConnectionPolicy` (a
        /// private address, a denied host or port), an insecure or forbidden redirect or scheme,
        /// no loader for the URL's scheme, a file that cannot be read (a directory, no
        /// permission), or the origin's 401, 403 or 451.
        case refused
        /// Over one of the limits on a source: too many pixels, a body over its byte limit, too
        /// many frames (``SourceLimit``), headers too long.
        case overLimit
        /// The bytes are not a picture the pipeline can decode: HTML or another declared
        /// non-picture type, an empty body, a format with no decoder, corrupt or unsupported data.
        case notAPicture
        /// The caller's task was cancelled (`CancellationError`).
        case cancelled
        /// The pipeline or its loader was too busy to take the request
        /// (``ImagePipelineError/overloaded(_:limit:detail:)``), or the origin said so (HTTP
        /// 429 or 503): try again later.
        case overloaded
        /// A connect, idle or total timeout, a transfer slower than its low-speed limit, or the
        /// origin's 408 or 504.
        case timedOut
        /// The request asked for cached data only, and there was none
        /// (``ImagePipelineError/notCached``).
        case notCached
        /// The source failed in a way that may pass: a network or TLS failure, a body cut
        /// short, another HTTP status (5xx, 206), an unknown loader error.
        case unavailable
        /// Anything else: a processor's error, a loader that answered "not modified" with
        /// nothing cached, an error of a type the pipeline does not know.
        case failed

        /// The kind of any error: an ``ImagePipelineError``'s ``ImagePipelineError/kind``,
        /// ``cancelled`` for `CancellationError`, what a ``PipelineFailure`` says
        /// (``PipelineFailure/failureKind``), Foundation's file and URL errors by their code,
        /// else ``failed``.
        public init(_ error: any Error) {
            self = Kind(known: error) ?? .failed
        }

        /// The kind an origin's HTTP status stands for, or `nil` for a status that is none of
        /// them (a 500, a 206): 404 and 410 ``notFound``; 401, 403 and 451 ``refused``; 413
        /// ``overLimit``; 408 and 504 ``timedOut``; 429 and 503 ``overloaded``. A custom HTTP
        /// loader's ``PipelineFailure/failureKind`` can answer with it.
        public init?(httpStatus: Int) {
            switch httpStatus {
            case 404, 410: self = .notFound
            case 401, 403, 451: self = .refused
            case 413: self = .overLimit
            case 408, 504: self = .timedOut
            case 429, 503: self = .overloaded
            default: return nil
            }
        }

        /// The status a server that answers with the picture should answer with instead: 404,
        /// 403, 413, 422 (not a picture), 499 (the client went away, as nginx logs it), 503,
        /// 504, 504 for ``notCached`` (as an `only-if-cached` miss), 502 for ``unavailable``,
        /// 500 for ``failed``.
        public var httpStatus: Int {
            switch self {
            case .notFound: return 404
            case .refused: return 403
            case .overLimit: return 413
            case .notAPicture: return 422
            case .cancelled: return 499
            case .overloaded: return 503
            case .timedOut, .notCached: return 504
            case .unavailable: return 502
            case .failed: return 500
            }
        }

        /// The kind of `error` when it is one the pipeline can tell, else `nil` (the caller
        /// picks: a loader's unknown error is ``unavailable``, a decoder's ``notAPicture``).
        init?(known error: any Error) {
            switch error {
            case let error as ImagePipelineError: self = error.kind
            case is CancellationError: self = .cancelled
            case let failure as any PipelineFailure:
                guard let kind = failure.failureKind else { return nil }
                self = kind
            case let error as CocoaError: self.init(cocoaError: error.code)
            case let error as POSIXError: self.init(errno: error.code.rawValue)
            // URLError is full Foundation's (which this module does not link on Linux): known by its domain.
            case let error where error._domain == "NSURLErrorDomain": self.init(urlErrorCode: error._code)
            default: return nil
            }
        }

        /// `URLError`'s codes that name a kind: `cancelled` (-999), `timedOut` (-1001),
        /// `fileDoesNotExist` (-1100), `noPermissionsToReadFile` (-1102), `fileIsDirectory`
        /// (-1101), `dataLengthExceedsMaximum` (-1103).
        private init?(urlErrorCode code: Int) {
            switch code {
            case -999: self = .cancelled
            case -1001: self = .timedOut
            case -1100: self = .notFound
            case -1102, -1101: self = .refused
            case -1103: self = .overLimit
            default: return nil
            }
        }

        /// `CocoaError`'s codes that name a kind (`Data(contentsOf:)` in a custom loader).
        private init?(cocoaError code: CocoaError.Code) {
            switch code {
            case .fileNoSuchFile, .fileReadNoSuchFile: self = .notFound
            case .fileReadNoPermission: self = .refused
            case .fileReadTooLarge: self = .overLimit
            case .userCancelled: self = .cancelled
            default: return nil
            }
        }

        /// `errno` values that name a kind.
        private init?(errno code: Int32) {
            switch code {
            case ENOENT, ENOTDIR: self = .notFound
            case EACCES, EPERM, EISDIR: self = .refused
            case ETIMEDOUT: self = .timedOut
            case ECANCELED: self = .cancelled
            default: return nil
            }
        }
    }

    /// What kind of failure this is (``Kind``), through every wrapper: a loader's 404 inside
    /// ``loadingFailed(_:underlying:)`` is ``Kind/notFound``, a decoder's pixel limit inside
    /// ``decodingFailed(_:underlying:)`` is ``Kind/overLimit``. A wrapped error of a type the
    /// pipeline does not know is ``Kind/unavailable`` from a loader, ``Kind/notAPicture`` from
    /// a decoder and ``Kind/failed`` from a processor, unless it says otherwise
    /// (``PipelineFailure/failureKind``).
    ///
    /// ```swift
    /// if case .notFound = error.kind { return .notFound }
    /// ```
    public var kind: Kind {
        switch self {
        case .notFound: return .notFound
        case .noLoader, .fileUnreadable: return .refused
        case .tooLarge, .tooManyPixels, .overLimit: return .overLimit
        case .noDecoder, .unsupported, .corruptData, .truncatedData: return .notAPicture
        case .overloaded: return .overloaded
        case .timeout: return .timedOut
        case .notCached: return .notCached
        case .truncated: return .unavailable
        case .unexpectedNotModified, .libraryUnavailable: return .failed
        case .loadingFailed(_, let error): return Kind(known: error) ?? .unavailable
        case .decodingFailed(_, let error): return Kind(known: error) ?? .notAPicture
        case .processingFailed(_, let error): return Kind(known: error) ?? .failed
        }
    }

    /// ``kind``.
    public var failureKind: Kind? { kind }
}
