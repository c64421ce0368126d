import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// The SSRF guard against the loopback fixture server: a refused request or connection never
/// reaches the server (its hit count stays 0), on the first request and after a redirect.
/// Every other address range is covered by the decision tests below, which connect nowhere.
@Suite("The HTTP loader's connection policy", .timeLimit(.minutes(2)))
struct ConnectionPolicyTests {
    /// The refusal inside `failure`, or `nil`.
    private func refusal(_ failure: LoadFailure?) -> ConnectionRefusal? {
        if case .http(.refused(let refusal)) = failure { return refusal }
        return nil
    }

    private func load(_ url: URL, _ configuration: HTTPDataLoader.Configuration) async -> LoadFailure? {
        await pipelineError { _ = try await HTTPDataLoader(configuration: configuration).load(DataLoadRequest(url: url)) }
    }

    @Test func publicOnlyRefusesTheLoopbackAddressANameResolvesTo() async throws {
        try await withFixtureServer { server in
            let url = URL(string: "http://localhost:\(server.port)/image/name")!
            let failure = await load(url, .init(maxRetries: 2, connectionPolicy: .publicOnly))
            let refused = try #require(refusal(failure), "got \(String(describing: failure))")
            #expect(refused.rule == .addressRange(.loopback, onlyPublicAllowed: true))
            #expect(refused.host == "localhost")
            let address = try #require(refused.address)
            #expect(address == IPAddress("127.0.0.1") || address == IPAddress("::1"))
            #expect(refused.port == server.port)
            #expect(refused.description == "refused \(address) of localhost (loopback) for \(url): only public addresses are allowed"
                        + " (allow them with the ConnectionPolicy's allowedRanges.insert(.loopback))")
            #expect(try await server.hits("/image/name") == 0)
        }
    }

    @Test func publicOnlyRefusesALoopbackLiteralBeforeConnecting() async throws {
        try await withFixtureServer { server in
            let url = server.url("/image/literal")
            let failure = await load(url, .init(connectionPolicy: .publicOnly))
            let refused = try #require(refusal(failure), "got \(String(describing: failure))")
            #expect(refused.rule == .addressRange(.loopback, onlyPublicAllowed: true))
            #expect(refused.address == IPAddress("127.0.0.1"))
            #expect(refused.description == "refused 127.0.0.1 (loopback) for \(url): only public addresses are allowed (allow them with the ConnectionPolicy's allowedRanges.insert(.loopback))")
            #expect(try await server.hits("/image/literal") == 0)
        }
    }

    @Test func aRedirectFromAnAllowedNameToAHostOffTheListIsNeverRequested() async throws {
        try await withFixtureServer { server in
            let target = server.url("/image/offlist")  // the same server, named 127.0.0.1
            let url = URL(string: "http://localhost:\(server.port)/goto/onlist?url=\(target.absoluteString)")!
            let policy = ConnectionPolicy(allowedHosts: ["localhost"])
            let failure = await load(url, .init(connectionPolicy: policy))
            let refused = try #require(refusal(failure), "got \(String(describing: failure))")
            #expect(refused.rule == .hostNotAllowed)
            #expect(refused.host == "127.0.0.1")
            #expect(refused.url == target)
            #expect(try await server.hits("/goto/onlist") == 1)
            #expect(try await server.hits("/image/offlist") == 0)

            // A redirect that stays on the list is followed.
            let allowed = URL(string: "http://localhost:\(server.port)/goto/stays?url=/image/stays")!
            let result = try await HTTPDataLoader(configuration: .init(connectionPolicy: policy)).load(DataLoadRequest(url: allowed))
            guard case .data(let data, _) = result else { Issue.record("not data"); return }
            #expect(data.prefix(4) == Data("TIMG".utf8))
        }
    }

    @Test func aRedirectToARefusedAddressIsNeverRequested() async throws {
        try await withFixtureServer { server in
            // Allowed: loopback by name; refused: everything but public addresses once redirected.
            let target = server.url("/image/redirected")
            let url = URL(string: "http://localhost:\(server.port)/goto/start?url=\(target.absoluteString)")!
            var policy = ConnectionPolicy.publicOnly
            policy.allowedRanges.insert(.loopback)
            policy.deniedHosts = ["127.0.0.1"]
            let failure = await load(url, .init(connectionPolicy: policy))
            let refused = try #require(refusal(failure), "got \(String(describing: failure))")
            #expect(refused.rule == .hostDenied("127.0.0.1"))
            #expect(try await server.hits("/goto/start") == 1)
            #expect(try await server.hits("/image/redirected") == 0)
        }
    }

    @Test func deniedHostsAndPortsAreRefusedBeforeConnecting() async throws {
        try await withFixtureServer { server in
            let denied = URL(string: "http://localhost:\(server.port)/image/denied")!
            let byName = await load(denied, .init(connectionPolicy: ConnectionPolicy(deniedHosts: ["LOCALHOST."])))
            #expect(refusal(byName)?.rule == .hostDenied("localhost"))
            let byPort = await load(denied, .init(connectionPolicy: ConnectionPolicy(allowedPorts: [443])))
            #expect(refusal(byPort)?.rule == .portNotAllowed)
            #expect(refusal(byPort)?.description == "refused port \(server.port) of localhost for \(denied): it is not among the allowed ports")
            let hits = try await server.hits("/image/denied")
            #expect(hits == 0)
        }
    }

    @Test func aRefusalIsPermanentAndNeverRetried() async throws {
        try await withFixtureServer { server in
            let url = server.url("/flaky/refused?fail=0")
            let loader = HTTPDataLoader(configuration: .init(maxRetries: 3, connectionPolicy: .publicOnly))
            let pipeline = makePipeline(loader: loader, decoders: fixtureDecoders, negativeCacheLifetime: 60)
            for _ in 1...2 {
                do {
                    _ = try await pipeline.image(for: ImageRequest(url: url))
                    Issue.record("loaded a refused URL")
                } catch let error as ImagePipelineError {
                    #expect(error.isPermanent)
                    guard case HTTPError.refused = error.underlyingError else { Issue.record("got \(error)"); return }
                }
            }
            #expect(try await server.hits("/flaky/refused") == 0)
        }
    }

    // MARK: Headers across origins

    @Test func callerHeadersAreDroppedWhenARedirectChangesOrigin() async throws {
        try await withFixtureServer { server in
            let configuration = HTTPDataLoader.Configuration(
                headers: ["Accept": "image/*", "X-Api-Key": "key"],
                authorization: { _, headers in headers["Authorization"] = "Bearer secret" })
            let loader = HTTPDataLoader(configuration: configuration)
            func sent(_ start: URL, _ path: String, requestHeaders: [String: String] = ["X-Token": "token"],
                      loader: HTTPDataLoader = loader) async throws -> [String: String] {
                _ = try await loader.load(DataLoadRequest(url: start, headers: requestHeaders))
                return try #require(try await server.stats().headers[path])
            }
            // localhost → 127.0.0.1: another host on the same port, another origin.
            let crossing = URL(string: "http://localhost:\(server.port)/goto/x?url=\(server.url("/headers/other").absoluteString)")!
            let other = try await sent(crossing, "/headers/other")
            #expect(other["accept"] == "image/*")
            #expect(other["x-api-key"] == nil && other["x-token"] == nil && other["authorization"] == nil, "\(other)")

            // The same origin keeps them all.
            let same = try await sent(server.url("/goto/s?url=/headers/same"), "/headers/same")
            #expect(same["x-api-key"] == "key" && same["x-token"] == "token" && same["authorization"] == "Bearer secret", "\(same)")

            // A header the caller lets cross is sent on.
            var keeping = configuration
            keeping.headersKeptAcrossOrigins = ["accept", "X-TOKEN"]
            let kept = try await sent(URL(string: "http://localhost:\(server.port)/goto/k?url=\(server.url("/headers/kept").absoluteString)")!,
                                      "/headers/kept", loader: HTTPDataLoader(configuration: keeping))
            #expect(kept["x-token"] == "token" && kept["x-api-key"] == nil && kept["authorization"] == nil, "\(kept)")
        }
    }

    // MARK: Decisions (no connection)

    @Test func theDefaultNeverReachesLinkLocalOrMetadataAddresses() {
        let policy = ConnectionPolicy.default
        for text in ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://0.0.0.0:8080/", "http://[::]/",
                     "http://224.0.0.1/", "http://255.255.255.255/", "http://[::ffff:169.254.169.254]/", "http://2852039166/",
                     "http://0xa9.0xfe.0xa9.0xfe/"] {
            let url = URL(string: text)!
            #expect(policy.refusal(for: url) != nil, "\(text) allowed")
        }
        for text in ["http://127.0.0.1/", "http://10.0.0.1/", "http://[::1]/", "http://example.com/", "http://192.168.1.1:8080/"] {
            #expect(policy.refusal(for: URL(string: text)!) == nil, "\(text) refused")
        }
    }

    @Test func theLoaderJudgesTheHostLibcurlReads() throws {
        let loader = HTTPDataLoader(configuration: .init(connectionPolicy: .publicOnly))
        for text in ["http://0x7f.1/", "http://2130706433:8080/", "http://127.0.0.1./", "http://[::ffff:7f00:1]/", "HTTP://LOCALHOST@127.0.0.1/"] {
            do {
                try loader.checkAllowed(URL(string: text)!)
                Issue.record("\(text) allowed")
            } catch HTTPError.refused(let refusal) {
                #expect(refusal.rule == .addressRange(.loopback, onlyPublicAllowed: true), "\(text)")
            }
        }
        let listed = HTTPDataLoader(configuration: .init(connectionPolicy: ConnectionPolicy(allowedHosts: ["pictures.example"])))
        try listed.checkAllowed(URL(string: "https://Pictures.Example./a.png")!)
        #expect(throws: HTTPError.self) { try listed.checkAllowed(URL(string: "https://pictures.example@other.example/a.png")!) }
    }

    @Test func publicOnlyAllowsOnlyPublicAddresses() {
        let policy = ConnectionPolicy.publicOnly
        let url = URL(string: "http://pictures.example/a.png")!
        for (text, range) in [("127.0.0.1", AddressRange.loopback), ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork),
                              ("192.168.0.1", .privateNetwork), ("100.64.0.1", .sharedAddressSpace), ("169.254.169.254", .linkLocal),
                              ("fc00::1", .privateNetwork), ("::ffff:127.0.0.1", .loopback), ("64:ff9b::a00:1", .privateNetwork),
                              ("2002:7f00:1::", .loopback), ("192.0.2.1", .documentation), ("198.18.0.1", .benchmarking)] {
            let address = IPAddress(text)!
            #expect(policy.refusal(connectingTo: address, port: 80, for: url)?.rule == .addressRange(range, onlyPublicAllowed: true), "\(text)")
        }
        for text in ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::ffff:8.8.8.8", "2002:808:808::"] {
            #expect(policy.refusal(connectingTo: IPAddress(text)!, port: 443, for: url) == nil, "\(text) refused")
        }
        #expect(policy.refusal(for: url) == nil)  // a name is judged by its addresses, when connecting
    }

    @Test func hostPatternsMatchExactNamesAndSubdomains() {
        let exact: HostPattern = "Example.COM."
        #expect(exact.matches("example.com") && !exact.matches("a.example.com") && !exact.matches("badexample.com"))
        let wildcard: HostPattern = "*.example.com"
        #expect(wildcard.matches("a.example.com") && wildcard.matches("a.b.example.com"))
        #expect(!wildcard.matches("example.com") && !wildcard.matches("badexample.com") && !wildcard.matches(".example.com"))
        let policy = ConnectionPolicy(allowedHosts: ["*.cdn.example"], deniedHosts: ["private.cdn.example"], allowedPorts: [443])
        #expect(policy.refusal(for: URL(string: "https://img.cdn.example/a.jpg")!) == nil)
        #expect(policy.refusal(for: URL(string: "https://IMG.CDN.EXAMPLE./a.jpg")!) == nil)
        #expect(policy.refusal(for: URL(string: "https://private.cdn.example/a.jpg")!)?.rule == .hostDenied("private.cdn.example"))
        #expect(policy.refusal(for: URL(string: "https://other.example/a.jpg")!)?.rule == .hostNotAllowed)
        #expect(policy.refusal(for: URL(string: "http://img.cdn.example/a.jpg")!)?.rule == .portNotAllowed)
        #expect(policy.refusal(for: URL(string: "https://img.cdn.example:8443/a.jpg")!)?.rule == .portNotAllowed)
    }

    @Test func refusalsAndFloodsArePermanentAndNotTransient() {
        let refusal = ConnectionRefusal(url: URL(string: "http://a.example/")!, host: "a.example", address: IPAddress("10.0.0.1"),
                                        port: 80, rule: .addressRange(.privateNetwork, onlyPublicAllowed: false))
        #expect(refusal.description == "refused 10.0.0.1 of a.example (private) for http://a.example/: private addresses are not allowed"
                    + " (allow them with the ConnectionPolicy's allowedRanges.insert(.privateNetwork))")
        for error in [HTTPError.refused(refusal), .headersTooLarge(limit: 1024)] {
            #expect(error.isPermanent, "\(error)")
        }
    }
}
