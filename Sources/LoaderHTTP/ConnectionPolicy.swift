import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where an ``HTTPDataLoader`` may connect: the SSRF guard of a server that fetches URLs its
/// users send.
///
/// The loader applies it at three points, so neither a redirect nor DNS can get around it:
/// - **Each URL it requests** — the first and every redirect, which the loader follows itself —
///   before any connection: host names against ``deniedHosts`` and ``allowedHosts``, the port
///   against ``allowedPorts``, and a host written as an address (`127.0.0.1`, `[::1]`, and the
///   spellings curl also accepts, `2130706433`, `0x7f.1`) against ``allowedRanges``.
/// - **Each address curl is about to connect to**, after DNS, through
///   `CURLOPT_OPENSOCKETFUNCTION`: a refused address is never connected to (when a name has
///   several addresses, curl goes on with the next; a name whose addresses are all refused
///   fails with the refusal).
/// - **Each request on a connection**, new or reused, before it is sent, through
///   `CURLOPT_PREREQFUNCTION`: the connection's address and port once more.
///
/// A refusal is ``HTTPError/refused(_:)``: permanent (kept by the pipeline's negative cache)
/// and never retried; it names the host, the address and the rule.
///
/// Through a proxy (libcurl honours `http_proxy`, `https_proxy` and `ALL_PROXY`), the address
/// curl connects to is the proxy's: the address checks then judge the proxy, and the proxy must
/// enforce its own rules for the addresses behind it. The host and port rules still apply to
/// every URL.
public struct ConnectionPolicy: Hashable, Sendable {
    /// The address ranges a connection may go to.
    public var allowedRanges: Set<AddressRange>
    /// When set, only these hosts may be requested (a redirect to another is refused); `nil`
    /// allows every host the other rules allow.
    public var allowedHosts: [HostPattern]?
    /// Hosts never requested, whatever ``allowedHosts`` says.
    public var deniedHosts: [HostPattern]
    /// When set, only these ports may be requested and connected to (a URL without a port
    /// counts as 80 for `http`, 443 for `https`); `nil` allows every port.
    public var allowedPorts: Set<Int>?

    /// Creates a policy. With no arguments it is ``default``.
    public init(allowedRanges: Set<AddressRange> = ConnectionPolicy.defaultRanges, allowedHosts: [HostPattern]? = nil,
                deniedHosts: [HostPattern] = [], allowedPorts: Set<Int>? = nil) {
        self.allowedRanges = allowedRanges
        self.allowedHosts = allowedHosts
        self.deniedHosts = deniedHosts
        self.allowedPorts = allowedPorts
    }

    /// The loader's default, for apps: every range but link-local (`169.254/16`, where cloud
    /// providers answer with machine credentials at `169.254.169.254`, and `fe80::/10`), the
    /// metadata services outside it (``AddressRange/cloudMetadata``: `fd00:ec2::254`,
    /// `100.100.100.200`, …), unspecified (`0.0.0.0`, which Linux connects to the local host,
    /// and `::`), multicast and broadcast. Loopback and private networks stay allowed, because an app's pictures may
    /// come from a development server or a NAS on the LAN; a server that fetches URLs its users
    /// send uses ``publicOnly`` instead.
    public static let `default` = ConnectionPolicy()

    /// Only ``AddressRange/publicInternet`` addresses, any host and port: for servers that
    /// fetch URLs their users send (imgproxy and weserv refuse loopback, link-local and private
    /// sources by default too). Add ``allowedHosts`` or ``allowedPorts`` to narrow it further.
    public static let publicOnly = ConnectionPolicy(allowedRanges: [.publicInternet])

    /// The ranges of ``default``.
    public static let defaultRanges: Set<AddressRange> =
        Set(AddressRange.allCases).subtracting([.linkLocal, .cloudMetadata, .unspecified, .multicast, .broadcast])

    /// The refusal for requesting `url`, or `nil` when the policy allows it: the host and port
    /// rules, and the range of a host written as an address, judged as the loader judges them:
    /// on the host and port libcurl reads from the URL and the name it would resolve
    /// (Foundation's reading when libcurl reads none). No name is resolved here; the loader
    /// checks resolved addresses as curl connects.
    public func refusal(for url: URL) -> ConnectionRefusal? {
        let (host, port) = CurlURL.hostAndPort(of: url.absoluteString) ?? (Self.normalizedHost(of: url), Self.port(of: url))
        return refusal(for: url, host: host, port: port)
    }

    /// ``refusal(for:)`` with the host and port as given (the loader passes curl's reading of
    /// the URL, the one its transfer will use).
    func refusal(for url: URL, host: String, port: Int?) -> ConnectionRefusal? {
        if let denied = deniedHosts.first(where: { $0.matches(host) }) {
            return ConnectionRefusal(url: url, host: host, address: nil, port: port, rule: .hostDenied(denied))
        }
        if let allowedHosts, !allowedHosts.contains(where: { $0.matches(host) }) {
            return ConnectionRefusal(url: url, host: host, address: nil, port: port, rule: .hostNotAllowed)
        }
        if let port, let allowedPorts, !allowedPorts.contains(port) {
            return ConnectionRefusal(url: url, host: host, address: nil, port: port, rule: .portNotAllowed)
        }
        if let address = IPAddress(host) ?? IPAddress.parseLenientIPv4(host) {
            return refusal(connectingTo: address, port: nil, for: url, host: host)
        }
        return nil
    }

    /// The refusal for connecting to `address` (on `port`, when known) while requesting `url`,
    /// or `nil` when the policy allows it.
    public func refusal(connectingTo address: IPAddress, port: Int?, for url: URL) -> ConnectionRefusal? {
        refusal(connectingTo: address, port: port, for: url, host: Self.normalizedHost(of: url))
    }

    private func refusal(connectingTo address: IPAddress, port: Int?, for url: URL, host: String) -> ConnectionRefusal? {
        let range = address.range
        if !allowedRanges.contains(range) {
            return ConnectionRefusal(url: url, host: host, address: address, port: port,
                                     rule: .addressRange(range, onlyPublicAllowed: allowedRanges == [.publicInternet]))
        }
        if let port, let allowedPorts, !allowedPorts.contains(port) {
            return ConnectionRefusal(url: url, host: host, address: address, port: port, rule: .portNotAllowed)
        }
        return nil
    }

    /// The URL's host, lower-case, without the brackets of an IPv6 literal or a final dot.
    static func normalizedHost(of url: URL) -> String { normalized(host: url.host ?? "") }

    /// `host` lower-case, without the brackets of an IPv6 literal or a final dot.
    static func normalized(host: String) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// The port a request to `url` goes to: its own, else the scheme's (80, 443).
    static func port(of url: URL) -> Int? {
        if let port = url.port { return port }
        switch url.scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }
}

/// A host name rule of a ``ConnectionPolicy``: `example.com` matches that host only;
/// `*.example.com` matches every name under it (`a.example.com`, `a.b.example.com`) but not
/// `example.com` itself, as a certificate wildcard does not (list both to allow both).
/// Compared without case and without a final dot; a name in Unicode (`bücher.example`) matches
/// its IDNA form (`xn--bcher-kva.example`), the name libcurl resolves. An address is written as
/// a URL's host is, without brackets (`127.0.0.1`, `::1`) and matches that spelling only: to
/// judge addresses, use ``ConnectionPolicy/allowedRanges``.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The pattern as given, lower-case (in IDNA form): `example.com` or `*.example.com`.
    public let pattern: String

    /// A pattern from its text.
    public init(_ pattern: String) {
        self.pattern = ConnectionPolicy.normalized(host: CurlURL.lookupName(ofPattern: pattern))
    }

    /// A pattern from a string literal.
    public init(stringLiteral value: String) { self.init(value) }

    /// Whether `host` (lower-case, as ``ConnectionPolicy`` normalises it) matches.
    public func matches(_ host: String) -> Bool {
        if pattern.hasPrefix("*.") {
            let suffix = pattern.dropFirst(1)  // ".example.com"
            return host.count > suffix.count && host.hasSuffix(suffix)
        }
        return host == pattern
    }

    /// ``pattern``.
    public var description: String { pattern }
}

/// Why an ``HTTPDataLoader`` refused a request or a connection (``HTTPError/refused(_:)``).
public struct ConnectionRefusal: Hashable, Sendable, CustomStringConvertible {
    /// The rule that refused.
    public enum Rule: Hashable, Sendable {
        /// The address is in a range the policy does not allow; `onlyPublicAllowed` when the
        /// policy allows ``AddressRange/publicInternet`` alone (``ConnectionPolicy/publicOnly``).
        case addressRange(AddressRange, onlyPublicAllowed: Bool)
        /// The host matched this ``ConnectionPolicy/deniedHosts`` pattern.
        case hostDenied(HostPattern)
        /// The host matched no ``ConnectionPolicy/allowedHosts`` pattern.
        case hostNotAllowed
        /// The port is not in ``ConnectionPolicy/allowedPorts``.
        case portNotAllowed
    }

    /// The URL being requested when the refusal came (a redirect's target, for a redirect).
    public let url: URL
    /// Its host, lower-case.
    public let host: String
    /// The address refused, when the refusal is about one (`nil` for a host or port rule
    /// applied to the URL).
    public let address: IPAddress?
    /// The port, when known.
    public let port: Int?
    /// The rule.
    public let rule: Rule

    /// Creates a refusal.
    public init(url: URL, host: String, address: IPAddress?, port: Int?, rule: Rule) {
        self.url = url
        self.host = host
        self.address = address
        self.port = port
        self.rule = rule
    }

    /// "refused 127.0.0.1 (loopback) for http://localhost:8080/a.png: only public addresses
    /// are allowed (allow them with the ConnectionPolicy's allowedRanges.insert(.loopback))":
    /// an address refusal names the setting that would allow it (a test against a local origin
    /// needs `.loopback`).
    public var description: String {
        let target = MessageText.url(url)
        let host = MessageText.escaped(self.host, limit: MessageText.urlLimit)
        switch rule {
        case .addressRange(let range, let onlyPublic):
            let what = address.map { self.host == $0.description || IPAddress(self.host) == $0 ? "\($0)" : "\($0) of \(host)" } ?? host
            let why = onlyPublic ? "only public addresses are allowed" : "\(range) addresses are not allowed"
            return "refused \(what) (\(range)) for \(target): \(why) (allow them with the ConnectionPolicy's "
                + "allowedRanges.insert(.\(Self.memberName(of: range))))"
        case .hostDenied(let pattern):
            return "refused the host \(host) for \(target): it matches the denied hosts' '\(pattern)'"
        case .hostNotAllowed:
            return "refused the host \(host) for \(target): it is not among the allowed hosts"
        case .portNotAllowed:
            let port = port.map(String.init) ?? "?"
            return "refused port \(port) of \(host) for \(target): it is not among the allowed ports"
        }
    }

    /// `range`'s name in Swift (`privateNetwork` for "private"), for the hint in the message.
    static func memberName(of range: AddressRange) -> String {
        switch range {
        case .publicInternet: "publicInternet"
        case .loopback: "loopback"
        case .linkLocal: "linkLocal"
        case .cloudMetadata: "cloudMetadata"
        case .privateNetwork: "privateNetwork"
        case .sharedAddressSpace: "sharedAddressSpace"
        case .unspecified: "unspecified"
        case .multicast: "multicast"
        case .broadcast: "broadcast"
        case .documentation: "documentation"
        case .benchmarking: "benchmarking"
        case .reserved: "reserved"
        }
    }
}
