import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// HTTPS against the fixture server with a throw-away self-signed certificate for 127.0.0.1
/// (made with the `openssl` tool; the suite is skipped where there is none).
@Suite("HTTPS", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
struct TLSTests {
    /// A certificate and key in a temporary folder, removed after `body`.
    private func withCertificate<T>(_ body: (_ certificate: String, _ key: String) async throws -> T) async throws -> T {
        let directory = try TemporaryDirectory(prefix: "LoaderHTTPTests-tls")
        defer { directory.remove() }
        let folder = directory.url
        let certificate = folder.appendingPathComponent("cert.pem").path, key = folder.appendingPathComponent("key.pem").path
        let openssl = try await ExternalTool.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
            certificate, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        try #require(openssl.status == 0, "\(openssl.stderr)")
        return try await body(certificate, key)
    }

    @Test func trustedCertificateLoadsAndAnUntrustedOneIsATLSFailure() async throws {
        try await withCertificate { certificate, key in
            try await withFixtureServer(tls: (certificate, key)) { server in
                let trusting = HTTPDataLoader(configuration: .init(caBundlePath: certificate))
                let response = try await makePipeline(loader: trusting, decoders: fixtureDecoders, negativeCacheLifetime: 0).image(for: ImageRequest(url: server.url("/image/a")))
                #expect(response.bitmap.size == PixelSize(width: 4, height: 3))

                let error = await pipelineError { _ = try await HTTPDataLoader().load(DataLoadRequest(url: server.url("/image/b"))) }
                guard case .http(.network(.tls, _))? = error else { Issue.record("got \(String(describing: error))"); return }
            }
        }
    }

    @Test func redirectFromHTTPSToHTTPIsRefusedUnlessAllowed() async throws {
        try await withCertificate { certificate, key in
            try await withFixtureServer(tls: (certificate, key)) { secure in
                try await withFixtureServer { plain in
                    let target = plain.url("/image/downgraded").absoluteString
                    let url = secure.url("/goto/x?url=\(target)")
                    let strict = HTTPDataLoader(configuration: .init(caBundlePath: certificate))
                    let error = await pipelineError { _ = try await strict.load(DataLoadRequest(url: url)) }
                    #expect(error == .http(.network(.insecureRedirect, message: "a redirect from https to http was refused: \(target)")))
                    #expect(try await plain.hits("/image/downgraded") == 0)

                    let lenient = HTTPDataLoader(configuration: .init(allowsInsecureRedirects: true, caBundlePath: certificate))
                    guard case .data = try await lenient.load(DataLoadRequest(url: url)) else { Issue.record("no data"); return }
                    #expect(try await plain.hits("/image/downgraded") == 1)
                }
            }
        }
    }
}
