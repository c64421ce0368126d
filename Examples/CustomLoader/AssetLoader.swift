import Foundation
import PipelineCore

/// The loader's own failure. The pipeline hands it to callers unchanged inside
/// `.loadingFailed(url, underlying:)` and asks `isPermanent` whether to remember it.
enum AssetError: PipelineFailure, CustomStringConvertible {
    case withdrawn(String)  // for good: remembered like a 404
    case unpacking(String)  // for now: the next request tries again

    var isPermanent: Bool { if case .withdrawn = self { true } else { false } }

    var description: String {
        switch self {
        case .withdrawn(let name): return "the asset \(name) was withdrawn"
        case .unpacking(let name): return "the asset \(name) is still being unpacked"
        }
    }
}

/// Serves `asset://NAME` from an in-memory catalogue.
struct AssetLoader: DataLoading {
    let catalogue: [String: Data]
    var withdrawn: Set<String> = []
    var unpacking: Set<String> = []
    var schemes: Set<String> { ["asset"] }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let name = request.url.host ?? ""
        if withdrawn.contains(name) { throw AssetError.withdrawn(name) }
        if unpacking.contains(name) { throw AssetError.unpacking(name) }
        guard let data = catalogue[name] else { throw ImagePipelineError.notFound(request.url) }
        return .data(data, ResponseMetadata(contentType: "image/png"))
    }
}
