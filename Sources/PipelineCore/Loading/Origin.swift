#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A URL's origin: scheme, host and port, normalized (scheme and host lower-case, the host
/// without IPv6 brackets or a final dot, the scheme's port when none is written), so that
/// `HTTP://Example.com/` and `http://example.com:80/` are one. What per-host fairness groups
/// requests by (the pipeline's door, the HTTP loader's queue) and what the HTTP loader compares
/// across a redirect. `data:` and `file:` URLs have one origin per scheme.
package struct Origin: Hashable, Sendable, CustomStringConvertible {
    package let scheme: String
    package let host: String
    /// The port, the scheme's when none was written; `nil` for a scheme without one.
    package let port: Int?

    /// The origin of `scheme`, `host` and `port`, normalized. A loader that parses URLs its own
    /// way (libcurl's parser) builds its origins from what it parsed.
    package init(scheme: String, host: String, port: Int?) {
        let scheme = scheme.lowercased()
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix("."), host.count > 1 { host.removeLast() }
        self.scheme = scheme
        self.host = host
        self.port = port ?? Self.defaultPort(of: scheme)
    }

    /// The port a URL of `scheme` uses when it writes none.
    package static func defaultPort(of scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": return 80
        case "https", "wss": return 443
        case "ftp": return 21
        default: return nil
        }
    }

    /// `scheme://host:port`.
    package var description: String { "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")" }
}

extension URL {
    /// The URL's ``Origin`` as Foundation parses it.
    package var origin: Origin { Origin(scheme: scheme ?? "", host: host ?? "", port: port) }
}
