import CCurl
import LazyLibraries
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// A URL's host and port as libcurl reads them (its URL API, the parser `CURLOPT_URL` uses), so
/// that the connection policy judges the host curl will connect to: a text that Foundation and
/// curl parse differently (`http://a.example\@b.example/`) cannot name one host to the policy
/// and another to the transfer.
enum CurlURL {
    /// The host (the name libcurl resolves: see ``lookupName(_:)``; lower-case, without IPv6
    /// brackets or a final dot) and port (the scheme's when none is written) of `text`, or `nil`
    /// when curl does not parse it as a URL with a host it can resolve, or libcurl is not installed
    /// (a request then fails with `HTTPError.libraryUnavailable`).
    static func hostAndPort(of text: String) -> (host: String, port: Int?)? {
        guard (try? LazyLibrary.curl.load()) != nil, let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, text, 0) == CURLUE_OK else { return nil }
        guard let host = part(CURLUPART_HOST, of: handle, flags: 0).flatMap(lookupName) else { return nil }
        let port = part(CURLUPART_PORT, of: handle, flags: UInt32(CURLU_DEFAULT_PORT)).map { String(decoding: $0, as: UTF8.self) }
        return (ConnectionPolicy.normalized(host: host), port.flatMap { Int($0) })
    }

    /// The ``Origin`` of `url` with the host and port libcurl reads (``hostAndPort(of:)``), or
    /// `nil` when curl does not parse it.
    static func origin(of url: URL) -> Origin? {
        guard let (host, port) = hostAndPort(of: url.absoluteString) else { return nil }
        return Origin(scheme: url.scheme ?? "", host: host, port: port)
    }

    /// The origin per-host limits and fairness count `url` under: its scheme with the host and
    /// port libcurl connects to (``hostAndPort(of:)``: case, a final dot, percent-encoding and
    /// IDNA spellings of one name are one), an address literal in one canonical form (`127.1`,
    /// `0x7f.0.0.1`, `2130706433` and `[::ffff:127.0.0.1]` are `127.0.0.1`; `[0:0::1]` is `::1`). A URL curl does not
    /// read keeps Foundation's reading (it fails before any connection anyway).
    static func connectionOrigin(of url: URL) -> Origin {
        guard let (host, port) = hostAndPort(of: url.absoluteString) else { return url.origin }
        return connectionOrigin(scheme: url.scheme ?? "", host: host, port: port)
    }

    /// ``connectionOrigin(of:)`` of a host and port ``hostAndPort(of:)`` already read.
    static func connectionOrigin(scheme: String, host: String, port: Int?) -> Origin {
        var canonical = (IPAddress(host) ?? IPAddress.parseLenientIPv4(host))?.description ?? host
        // An IPv4-mapped address connects to the IPv4 host it maps.
        if canonical.hasPrefix("::ffff:"), canonical.contains(".") { canonical.removeFirst(7) }
        return Origin(scheme: scheme, host: canonical, port: port)
    }

    /// The name libcurl resolves for `host` (its URL parser's reading, as bytes, percent-decoded).
    /// An ASCII host is itself. Any other is mapped by libcurl through IDNA (UTS 46) before it is
    /// resolved, so `loc\u{AD}alhost` (a soft hyphen, mapped to nothing), fullwidth
    /// `ｌｏｃａｌｈｏｓｔ` and `localhost\u{3002}` are all `localhost` to it: the host rules must
    /// judge that name, not the text. It is mapped here as libcurl does, with libidn2's
    /// `idn2_lookup_ul` (which reads the bytes in the C library's character set), non-transitional
    /// first, then transitional. `nil` when the name cannot be mapped (libcurl would fail the
    /// transfer), or when this libcurl maps names but libidn2 is not found to map it alike.
    static func lookupName(_ host: [UInt8]) -> String? {
        guard host.contains(where: { $0 >= 0x80 }), curlMapsNames else { return String(decoding: host, as: UTF8.self) }
        return idnaLookup("idn2_lookup_ul", host)
    }

    /// `pattern` (a host rule's text, UTF-8) in the IDNA ASCII form ``lookupName(_:)`` gives
    /// hosts, so that `bücher.example` matches `xn--bcher-kva.example`; the text itself when it
    /// is ASCII or cannot be mapped.
    static func lookupName(ofPattern pattern: String) -> String {
        guard pattern.utf8.contains(where: { $0 >= 0x80 }) else { return pattern }
        let wildcard = pattern.hasPrefix("*.")
        let name = Array((wildcard ? pattern.dropFirst(2) : pattern[...]).utf8)
        guard let mapped = idnaLookup("idn2_lookup_u8", name) else { return pattern }
        return wildcard ? "*." + mapped : mapped
    }

    /// Whether this libcurl was built with IDN support (it then maps non-ASCII names).
    private static let curlMapsNames: Bool = {
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return false }
        return info.pointee.features & CURL_VERSION_IDN != 0
    }()

    /// `name` through libidn2's `function` (`idn2_lookup_ul` or `idn2_lookup_u8`, which share a
    /// signature), found in the process (libcurl loaded it), with libcurl's flags: NFC input and
    /// non-transitional processing, then transitional. `nil` when it fails or is not found.
    private static func idnaLookup(_ function: String, _ name: [UInt8]) -> String? {
        #if canImport(Glibc)
        typealias Lookup = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, Int32) -> Int32
        // libidn2 came with libcurl, which is opened RTLD_LOCAL: looked for from its handle.
        guard (try? LazyLibrary.curl.load()) != nil, let symbol = LazyLibrary.curl.symbol(function) else { return nil }
        let lookup = unsafeBitCast(symbol, to: Lookup.self)
        let text = name.map { CChar(bitPattern: $0) } + [0]
        // IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL, then IDN2_TRANSITIONAL, as libcurl's idn_decode.
        for flags: Int32 in [1 | 8, 4] {
            var output: UnsafeMutablePointer<CChar>?
            let code = text.withUnsafeBufferPointer { lookup($0.baseAddress, &output, flags) }
            guard code == 0, let output else { continue }
            defer { free(output) }
            return String(cString: output)
        }
        #endif
        return nil
    }

    /// One part of the parsed URL as bytes, freed after copying.
    private static func part(_ what: CURLUPart, of handle: OpaquePointer, flags: UInt32) -> [UInt8]? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))
    }
}
