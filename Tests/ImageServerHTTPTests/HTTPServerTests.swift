import ImageServer
import ImageServerHTTP
import Testing

@Suite struct HTTPServerTests {
    @Test func startsOnAnEphemeralPort() throws {
        let server = try HTTPServer(configuration: HTTPServer.Configuration()) { _ in ServerResponse(status: 204) }
        #expect(server.port >= 0)
    }
}
