#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PipelineCore

/// Why an ``HTTPServer`` could not start.
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host is not an IPv4 or IPv6 address literal (`host:port` parsing and name lookup are
    /// the caller's).
    case invalidHost(String)
    /// libmicrohttpd could not listen on the address (`127.0.0.1:8080`); `reason` is its message
    /// (`Failed to bind to port 8080: Address already in use`), empty when it gave none.
    case cannotListen(address: String, reason: String)
    /// A system call the server needs failed (its name and `errno`).
    case resources(String, Int32)
    /// libmicrohttpd, opened when the first server starts, is not installed: `MissingLibrary`
    /// names the package to install.
    case libraryUnavailable(MissingLibrary)

    public var description: String {
        switch self {
        case .invalidHost(let host): "not an IP address to listen on: \(host.debugDescription)"
        case .cannotListen(let address, let reason): "cannot listen on \(address)" + (reason.isEmpty ? "" : ": \(reason)")
        case .resources(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        case .libraryUnavailable(let missing): missing.description
        }
    }
}
