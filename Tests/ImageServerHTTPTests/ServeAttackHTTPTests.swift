import Foundation
import ImageServer
import ImageServerHTTP
import Testing

/// What a hostile client tried against the transport, each kept as a regression test.
extension HTTPServerTests {
    @Suite struct ServeAttackHTTPTests {
        @Test func twoContentLengthsAreRefusedAndSmuggleNoRequest() async throws {
            let seen = RequestLog()
            let server = try seen.server()
            let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            let connection = try RawConnection(port: server.port)
            connection.send("GET /first HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: \(smuggled.utf8.count)\r\n\r\n" + smuggled)
            let bytes = await connection.readToEnd()
            connection.close()
            await server.shutdown()
            let response = try #require(RawResponse(bytes))
            #expect(response.status == 413)
            #expect(seen.all.isEmpty, "the handler saw \(seen.all.map(\.path))")
        }
    }
}
