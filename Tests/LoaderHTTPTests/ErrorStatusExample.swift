import PipelineCore

// The function ErrorsAndFailures.md shows (ReadmeTests checks the page shows it as it is here):
// a server's answer for a failure, one status per kind; ErrorKindTests checks it is
// `ImagePipelineError.Kind.httpStatus`.
func documentedStatus(for error: any Error) -> Int {
    // README begin
    func httpStatus(for error: any Error) -> Int {
        switch ImagePipelineError.Kind(error) {
        case .notFound: 404             // HTTP 404 or 410, a missing file
        case .refused: 403              // ConnectionPolicy (the SSRF guard), no loader for the scheme, origin 401/403/451
        case .overLimit: 413            // too many pixels or frames, a body over its byte limit
        case .notAPicture: 422          // HTML, junk, a format with no decoder, corrupt data
        case .cancelled: 499            // the client went away
        case .overloaded: 503           // the pipeline or the origin is too busy: try again later
        case .timedOut, .notCached: 504
        case .unavailable: 502          // a network failure, a 5xx, a body cut short
        case .failed: 500               // a processor failed
        }
    }
    // README end
    return httpStatus(for: error)
}
