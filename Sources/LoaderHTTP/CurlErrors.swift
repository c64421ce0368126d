import CCurl
import CCurlShim
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Maps curl's result codes to the pipeline's typed errors.
enum CurlErrors {
    /// The typed error for a transfer that curl ended with `code`.
    static func map(_ code: CURLcode, transfer: CurlTransfer) -> any Error {
        let message = String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return HTTPError.network(.dns, message: message)
        case CURLE_COULDNT_CONNECT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING,
             CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_WEIRD_SERVER_REPLY:
            return HTTPError.network(.connection, message: message)
        case CURLE_PARTIAL_FILE:
            return ImagePipelineError.truncated(expected: transfer.metadata?.contentLength, received: Int64(transfer.body.count))
        case CURLE_OPERATION_TIMEDOUT:
            // The only curl timer the transfer sets (the engine keeps the idle, low-speed and
            // total limits); curl's detail says how long the connect ran ("… after 301 milliseconds").
            let timeout = HTTPError.seconds(transfer.limits.connectTimeout)
            return ImagePipelineError.timeout("connecting took longer than the connect timeout of \(timeout) s (\(transfer.curlDetail ?? message))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            return HTTPError.network(.tls, message: message)
        case CURLE_BAD_CONTENT_ENCODING:
            return HTTPError.corruptEncoding(message: transfer.curlDetail ?? message)
        default:
            return HTTPError.network(.other, message: "curl error \(code.rawValue): \(message)")
        }
    }

    /// The typed error for a multi-interface call that did not succeed, or `nil` when it did.
    /// These fail only on misuse (a bad handle) or when memory runs out; the engine fails the
    /// transfers concerned with this error and goes on.
    static func multiFailure(_ code: CURLMcode, _ call: String) -> HTTPError? {
        guard code != CURLM_OK else { return nil }
        return .engineFailure(message: "\(call) failed: \(String(cString: curl_multi_strerror(code)))")
    }
}
