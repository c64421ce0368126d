import Foundation
@testable import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Attacks on the SSRF guard (issue 21): spellings of the loopback server that a policy should
/// refuse, `Location`s that might read differently to Foundation and to libcurl, internationalised
/// spellings of a denied name, caller headers across origins, reused connections, and the
/// classifier against the cloud metadata addresses. Traffic goes to the loopback fixture server
/// only; every other address is judged by the decision functions, which connect nowhere.
@Suite("Attacks on the HTTP loader's connection policy", .timeLimit(.minutes(3)))
struct ConnectionPolicyAttackTests {
    /// The refusal inside `failure`, or `nil`.
    private func refusal(_ failure: LoadFailure?) -> ConnectionRefusal? {
        if case .http(.refused(let refusal)) = failure { return refusal }
        return nil
    }

    /// The failure of loading `url` with `loader`, or `nil` when it loaded.
    private func failure(_ loader: HTTPDataLoader, _ url: URL, headers: [String: String] = [:]) async -> LoadFailure? {
        await pipelineError { _ = try await loader.load(DataLoadRequest(url: url, headers: headers)) }
    }

    /// `/goto/<name>` on `host` of `server`, answering `status` with `Location: target` exactly
    /// as written (the query carries it percent-encoded once, the fixture decodes it once).
    private func goto(_ server: FixtureServer, host: String = "localhost", _ name: String, to target: String, status: Int = 302) -> URL {
        let query = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        return URL(string: "http://\(host):\(server.port)/goto/\(name)?status=\(status)&url=\(query)")!  // test-owned text
    }

    // MARK: Loopback spellings

    /// Every spelling of the loopback server is refused under `publicOnly` before a request is
    /// sent, and at once: a refusal is never retried (the retry delay here is 30 s).
    @Test func publicOnlyRefusesEveryLoopbackSpellingBeforeAnyRequest() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(maxRetries: 3, retryBaseDelay: 30, connectionPolicy: .publicOnly))
            let hosts = ["localhost", "LOCALHOST", "127.0.0.1", "127.1", "127.0.1", "0x7f000001", "2130706433", "0177.0.0.1",
                         "0x7F.0.0.1", "127.000.000.001", "127.0.0.1.", "127.127.127.127", "%31%32%37.0.0.1", "[::1]", "[::1%25lo]",
                         "[::ffff:127.0.0.1]", "[::FFFF:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]", "[::127.0.0.1]", "[0::1]"]
            let start = ContinuousClock.now
            for (index, host) in hosts.enumerated() {
                let url = try #require(URL(string: "HTTP://\(host):\(server.port)/image/spelling\(index)"), "\(host)")
                let failure = await failure(loader, url)
                #expect(refusal(failure) != nil, "\(host): \(String(describing: failure))")
            }
            #expect(ContinuousClock.now - start < .seconds(20), "a refusal was retried")
            let stats = try await server.stats()
            #expect(stats.hits.keys.filter { $0.hasPrefix("/image/spelling") }.isEmpty, "\(stats.hits)")
        }
    }

    /// A policy that allows the loopback server by its name only refuses every other spelling of
    /// it after a redirect, whatever the redirect status, and whatever Foundation makes of the
    /// `Location` (userinfo that looks like a host, backslashes, a tab, a fragment, a
    /// protocol-relative or percent-encoded host): the hop is never requested.
    @Test func anAllowListByNameRefusesEveryOtherSpellingAfterARedirect() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(connectionPolicy: ConnectionPolicy(allowedHosts: ["localhost"])))
            let port = server.port
            let targets = [
                "http://127.0.0.1:\(port)/image/t0", "http://127.1:\(port)/image/t1", "http://0x7f000001:\(port)/image/t2",
                "http://[::ffff:127.0.0.1]:\(port)/image/t3", "http://[::1]:\(port)/image/t4", "HTTP://127.0.0.1:\(port)/image/t5",
                "//127.0.0.1:\(port)/image/t6", "http://localhost:\(port)@127.0.0.1:\(port)/image/t7",
                "http://localhost:\(port)\\@127.0.0.1:\(port)/image/t8", "http://127.0.0.1:\(port)#@localhost:\(port)/image/t9",
                "http://user:pass@127.0.0.1:\(port)/image/t10", "http://%31%32%37.0.0.1:\(port)/image/t11",
                "http://127.0.0.1\t:\(port)/image/t12", "http://127.0.0.1:\(port)/image/t13#localhost",
                "http:\\\\127.0.0.1:\(port)\\image\\t14", "http://[::1%25lo]:\(port)/image/t15",
            ]
            let statuses = [301, 302, 303, 307, 308]
            for (index, target) in targets.enumerated() {
                let start = goto(server, "hop\(index)", to: target, status: statuses[index % statuses.count])
                let failure = await failure(loader, start)
                #expect(failure != nil, "\(target) was followed")
                if case .http(.network(.forbiddenRedirect, _)) = failure { continue }  // not a URL: fine
                if case .http(.network(.other, _)) = failure { continue }  // libcurl reads no host: fine
                #expect(refusal(failure)?.rule == .hostNotAllowed, "\(target): \(String(describing: failure))")
            }
            let stats = try await server.stats()
            #expect(stats.hits.keys.filter { $0.hasPrefix("/image/") }.isEmpty, "\(stats.hits)")
            #expect(stats.hits.keys.filter { $0.hasPrefix("/goto/hop") }.count == targets.count, "\(stats.hits)")
        }
    }

    /// A keep-alive connection opened for an allowed name is not reused for a spelling the
    /// policy refuses, although curl could: the name is refused before any connection.
    @Test func aConnectionOpenedForAnAllowedNameIsNotLentToARefusedOne() async throws {
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(connectionPolicy: ConnectionPolicy(allowedHosts: ["localhost"])))
            _ = try await loader.load(DataLoadRequest(url: URL(string: "http://localhost:\(server.port)/image/reuse-a")!))
            let failure = await failure(loader, server.url("/image/reuse-b"))
            #expect(refusal(failure)?.rule == .hostNotAllowed, "\(String(describing: failure))")
            #expect(try await server.hits("/image/reuse-a") == 1)
            #expect(try await server.hits("/image/reuse-b") == 0)
        }
    }

    // MARK: Internationalised names

    /// libcurl maps a non-ASCII host through IDNA (UTS 46) before it resolves it, so
    /// `loc\u{AD}alhost` (a soft hyphen, mapped to nothing) and fullwidth `ｌｏｃａｌｈｏｓｔ` are
    /// `localhost` to it. A deny-list must judge the name curl resolves, not the text curl read.
    /// libidn2 reads the host in the process's character set, so the test sets a UTF-8 one as an
    /// app that calls `setlocale(LC_ALL, "")` has (in the C locale curl cannot map the name and
    /// fails the transfer, which hides the bypass).
    @Test func internationalisedSpellingsOfADeniedHostAreRefused() async throws {
        Self.useUTF8CharacterSet()
        try await withFixtureServer { server in
            let loader = HTTPDataLoader(configuration: .init(connectionPolicy: ConnectionPolicy(deniedHosts: ["localhost"])))
            let port = server.port
            let direct = try #require(URL(string: "http://loc%C2%ADalhost:\(port)/image/idn-direct"))
            let directFailure = await failure(loader, direct)
            #expect(refusal(directFailure)?.rule == .hostDenied("localhost"), "\(String(describing: directFailure))")

            let fullwidth = "%EF%BD%8C%EF%BD%8F%EF%BD%83%EF%BD%81%EF%BD%8C%EF%BD%88%EF%BD%8F%EF%BD%93%EF%BD%94"
            let redirected = goto(server, host: "127.0.0.1", "idn", to: "http://\(fullwidth):\(port)/image/idn-redirect")
            let redirectFailure = await failure(loader, redirected)
            #expect(refusal(redirectFailure)?.rule == .hostDenied("localhost"), "\(String(describing: redirectFailure))")
            #expect(try await server.hits("/goto/idn") == 1)
            #expect(try await server.hits("/image/idn-direct") == 0)
            #expect(try await server.hits("/image/idn-redirect") == 0)
        }
    }

    /// The same, judged without connecting: a raw UTF-8 `Location`, an ideographic full stop for
    /// a dot, and a deny pattern written in Unicode against the host in any spelling.
    @Test func internationalisedNamesAreJudgedAsLibcurlResolvesThem() throws {
        Self.useUTF8CharacterSet()
        let loader = HTTPDataLoader(configuration: .init(connectionPolicy: ConnectionPolicy(deniedHosts: ["localhost", "*.bücher.example"])))
        let base = URL(string: "http://127.0.0.1/goto/x")!
        for location in ["http://ｌｏｃａｌｈｏｓｔ/a", "http://ＬＯＣＡＬＨＯＳＴ/a", "http://loc\u{AD}alhost/a", "http://localhost\u{3002}/a",
                         "http://img.b%C3%BCcher.example/a", "http://IMG.BÜCHER.EXAMPLE/a", "http://img.xn--bcher-kva.example/a"] {
            let target = try loader.redirectTarget(location, from: base)
            #expect(throws: HTTPError.self, "\(location) allowed") { try loader.checkAllowed(target) }
        }
        try loader.checkAllowed(loader.redirectTarget("http://bücher.example/a", from: base))  // not under the pattern
        // The public decision reads the URL as the loader does, not as Foundation does.
        let policy = loader.configuration.connectionPolicy
        for text in ["http://loc%C2%ADalhost/a", "http://img.b%C3%BCcher.example/a", "http://%6cocalhost/a"] {
            #expect(policy.refusal(for: URL(string: text)!) != nil, "\(text) allowed")
        }
        #expect(HostPattern("*.Bücher.Example").matches("img.xn--bcher-kva.example"))
        // Circled digits map to ASCII ones: `①②⑦.0.0.1` is the address 127.0.0.1, judged as one.
        let circled = URL(string: "http://%E2%91%A0%E2%91%A1%E2%91%A6.0.0.1/a")!
        #expect(ConnectionPolicy.publicOnly.refusal(for: circled)?.rule == .addressRange(.loopback, onlyPublicAllowed: true))
    }

    /// Sets the C library's character set to UTF-8 once for the process (`LC_CTYPE` only).
    private static func useUTF8CharacterSet() { _ = utf8CharacterSet }
    private static let utf8CharacterSet: Bool = setlocale(LC_CTYPE, "C.UTF-8") != nil

    // MARK: Headers across origins

    /// Once a redirect crossed to another origin, the caller's headers stay dropped, also when a
    /// later hop comes back to the first origin (A → B → A): B chose that URL, so A's key must not
    /// be spent on it. The auth hook is not asked again either.
    @Test func headersStayDroppedWhenARedirectChainComesBack() async throws {
        try await withFixtureServer { server in
            let hookCalls = Counter()
            let loader = HTTPDataLoader(configuration: .init(
                headers: ["Accept": "image/*", "X-Api-Key": "key"],
                authorization: { _, headers in
                    hookCalls.increment()
                    headers["Authorization"] = "Bearer secret"
                }))
            let back = "http://localhost:\(server.port)/headers/back"
            let viaOther = goto(server, host: "127.0.0.1", "b", to: back, status: 307).absoluteString
            let start = goto(server, "a", to: viaOther, status: 308)
            _ = try await loader.load(DataLoadRequest(url: start, headers: ["X-Token": "token"]))
            let stats = try await server.stats()
            let first = try #require(stats.headers["/goto/a"])
            #expect(first["x-api-key"] == "key" && first["x-token"] == "token" && first["authorization"] == "Bearer secret", "\(first)")
            for path in ["/goto/b", "/headers/back"] {
                let sent = try #require(stats.headers[path])
                #expect(sent["x-api-key"] == nil && sent["x-token"] == nil && sent["authorization"] == nil, "\(path): \(sent)")
                #expect(sent["accept"] == "image/*")
            }
            #expect(hookCalls.current == 1)
        }
    }

    /// Another port on the same host is another origin: the caller's headers are dropped.
    @Test func aRedirectToAnotherPortDropsTheCallersHeaders() async throws {
        try await withFixtureServer { first in
            try await withFixtureServer { second in
                let configuration = HTTPDataLoader.Configuration(
                    headers: ["X-Api-Key": "key"], authorization: { _, headers in headers["Authorization"] = "Bearer secret" })
                let loader = HTTPDataLoader(configuration: configuration)
                let start = goto(first, "port", to: "http://localhost:\(second.port)/headers/port")
                _ = try await loader.load(DataLoadRequest(url: start, headers: ["X-Token": "token"]))
                let sent = try #require(try await second.stats().headers["/headers/port"])
                #expect(sent["x-api-key"] == nil && sent["x-token"] == nil && sent["authorization"] == nil, "\(sent)")
            }
        }
    }

    /// Origins are compared as libcurl reads them: another spelling of the same address and
    /// port (`127.000.000.001`, an upper-case host, the scheme's port written out) is the same
    /// origin; another scheme, host or port is not.
    @Test func originsAreComparedAsLibcurlReadsThem() throws {
        func same(_ a: String, _ b: String) -> Bool { HTTPDataLoader.sameOrigin(URL(string: a)!, URL(string: b)!) }
        #expect(same("http://127.0.0.1:8080/a", "http://127.000.000.001:8080/b"))
        #expect(same("http://localhost/a", "HTTP://LOCALHOST:80/b"))
        #expect(same("https://localhost/a", "https://user:pass@localhost:443/b"))
        #expect(!same("http://localhost/a", "https://localhost/a"))
        #expect(!same("http://localhost:8080/a", "http://localhost:8081/a"))
        #expect(!same("http://localhost/a", "http://127.0.0.1/a"))
        #expect(!same("http://localhost:8080/a", "http://localhost:8080@127.0.0.1:8080/a"))
    }

    // MARK: Decisions (no connection)

    /// Cloud metadata services that answer outside `169.254/16`: AWS's IPv6 instance metadata
    /// (`fd00:ec2::254`) and EKS pod identity (`fd00:ec2::23`), Google's IPv6 metadata server
    /// (`fd20:ce::254`), Alibaba Cloud's `100.100.100.200` and Oracle Cloud's `192.0.0.192`
    /// (private, shared and reserved addresses, which the default allows). The default promises never to
    /// reach a metadata address, so it must refuse them, in every spelling.
    @Test func theDefaultNeverReachesCloudMetadataOutsideLinkLocal() throws {
        let policy = ConnectionPolicy.default
        let url = URL(string: "http://metadata.example/latest/meta-data/")!
        for text in ["fd00:ec2::254", "fd00:ec2::23", "fd20:ce::254", "100.100.100.200", "192.0.0.192", "::ffff:100.100.100.200", "64:ff9b::6464:64c8"] {
            let address = try #require(IPAddress(text))
            #expect(policy.refusal(connectingTo: address, port: 80, for: url) != nil, "\(text) allowed")
        }
        let loader = HTTPDataLoader()
        for text in ["http://[fd00:ec2::254]/latest/meta-data/", "http://100.100.100.200/latest/meta-data/", "http://1684301000/",
                     "http://[FD00:EC2:0:0:0:0:0:254]/"] {
            #expect(throws: HTTPError.self, "\(text) allowed") { try loader.checkAllowed(URL(string: text)!) }
        }
        #expect(ConnectionPolicy.publicOnly.refusal(connectingTo: IPAddress("fd00:ec2::254")!, port: 80, for: url) != nil)
    }

    /// The unspecified and link-local addresses in every spelling a URL host may take are
    /// refused by the default before any connection (Linux connects `0.0.0.0` to the local host),
    /// also where Foundation reads no host at all (`http:///169.254.169.254/`) and libcurl does.
    @Test func theDefaultRefusesUnspecifiedAndLinkLocalSpellings() throws {
        let loader = HTTPDataLoader()
        for text in ["http://0/", "http://0.0.0.0./", "http://0x0/", "http://00000/", "http://0.0/", "http://[::]/", "http://[::0]/",
                     "http://[::ffff:0.0.0.0]/", "http://[::ffff:0:0]/", "http://169.254.169.254./", "http://0251.0376.0251.0376/",
                     "http://0xa9fea9fe/", "http://169.254.43518/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::169.254.169.254]/",
                     "http://[2002:a9fe:a9fe::1]/", "http://[::169.254.169.254]/", "http://[FE80::1%25eth0]/", "http://[fe80::a9fe:a9fe]/",
                     "http://%31%36%39.254.169.254/", "http://[ff02::1]/", "http://224.0.0.251/", "http://255.255.255.255/",
                     "http:///169.254.169.254/", "http:///0.0.0.0/"] {  // Foundation reads no host in these, libcurl does
            let url = try #require(URL(string: text), "\(text)")
            #expect(throws: HTTPError.self, "\(text) allowed") { try loader.checkAllowed(url) }
        }
    }

    /// Hostile text never crashes the parsers the guard runs on a `Location` and a URL host:
    /// pseudo-random strings over the characters that matter to them, deterministic per seed.
    @Test func hostileHostTextNeverCrashesTheParsers() {
        let alphabet = Array("0123456789abcdefxX.:[]%@/\\#?-_ ffff::1%25\t".utf8)
        let loader = HTTPDataLoader(configuration: .init(connectionPolicy: .publicOnly))
        let base = URL(string: "http://localhost/a")!
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for _ in 0..<20_000 {
            let length = Int(next() % 24)
            let bytes = (0..<length).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            let text = String(decoding: bytes, as: UTF8.self)
            _ = IPAddress(text)
            _ = IPAddress.parseLenientIPv4(text)
            if let target = try? loader.redirectTarget("http://" + text + "/x", from: base) {
                _ = try? loader.checkAllowed(target)
            }
        }
    }
}
