import CCurl
import CCurlShim
import Foundation
import PipelineCore

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
            return ImagePipelineError.timeout("connecting took longer than the connect timeout (\(message))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
             CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            return HTTPError.network(.tls, message: message)
        case CURLE_TOO_MANY_REDIRECTS:
            return HTTPError.network(.tooManyRedirects, message: message)
        case CURLE_UNSUPPORTED_PROTOCOL:
            // The first URL's scheme was checked before the transfer, so this is a redirect to a
            // scheme the transfer may not follow: https → http unless allowed.
            return HTTPError.network(.insecureRedirect, message: "a redirect left https (\(message))")
        default:
            return HTTPError.network(.other, message: "curl error \(code.rawValue): \(message)")
        }
    }

    /// Fails loudly when a multi-interface call does not succeed: those fail only on misuse
    /// (a bad handle) or out of memory, which the loader cannot recover from.
    static func check(_ code: CURLMcode, _ what: StaticString) {
        if code != CURLM_OK {
            fatalError("\(what) failed: \(String(cString: curl_multi_strerror(code)))")
        }
    }
}
