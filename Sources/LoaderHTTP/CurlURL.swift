import CCurl

/// A URL's host and port as libcurl reads them (its URL API, the parser `CURLOPT_URL` uses), so
/// that the connection policy judges the host curl will connect to: a text that Foundation and
/// curl parse differently (`http://a.example\@b.example/`) cannot name one host to the policy
/// and another to the transfer.
enum CurlURL {
    /// The host (lower-case, without IPv6 brackets or a final dot) and port (the scheme's when
    /// none is written) of `text`, or `nil` when curl does not parse it as a URL with a host.
    static func hostAndPort(of text: String) -> (host: String, port: Int?)? {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, text, 0) == CURLUE_OK else { return nil }
        guard let host = part(CURLUPART_HOST, of: handle, flags: 0) else { return nil }
        let port = part(CURLUPART_PORT, of: handle, flags: UInt32(CURLU_DEFAULT_PORT)).flatMap { Int($0) }
        return (ConnectionPolicy.normalized(host: host), port)
    }

    /// One part of the parsed URL, freed after copying.
    private static func part(_ what: CURLUPart, of handle: OpaquePointer, flags: UInt32) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}
