import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PipelineCore

/// The comparison loader: `URLSession` (FoundationNetworking on Linux) with the same per-host
/// connection limit, no URL cache, each load one data task.
struct URLSessionDataLoader: DataLoading {
    let session: URLSession

    var schemes: Set<String> { ["http", "https"] }

    init(maxConnectionsPerHost: Int) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let session = session
        return try await withCheckedThrowingContinuation { continuation in
            session.dataTask(with: request.url) { data, response, error in
                guard let data, let http = response as? HTTPURLResponse, error == nil else {
                    continuation.resume(throwing: error ?? URLError(.badServerResponse))
                    return
                }
                guard http.statusCode == 200 else {
                    continuation.resume(throwing: URLError(.badServerResponse))
                    return
                }
                continuation.resume(returning: .data(data, ResponseMetadata()))
            }.resume()
        }
    }
}
