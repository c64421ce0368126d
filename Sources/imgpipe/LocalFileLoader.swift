import Foundation
import PipelineCore

/// imgpipe's own minimal loader for `file` URLs, until the LoaderFile module (written in
/// parallel) lands; then imgpipe should register `LoaderFile`'s loader instead.
///
/// The file is memory-mapped, not read: mapping returns at once (nothing blocks the
/// cooperative pool), the decoder's page faults read the bytes on the decode pool, and the
/// bytes are never copied into the heap.
struct LocalFileLoader: DataLoading {
    var schemes: Set<String> { ["file"] }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        let path = request.url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "no such file")
        }
        guard !isDirectory.boolValue else {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "it is a directory")
        }
        do {
            let data = try Data(contentsOf: request.url, options: .alwaysMapped)
            var metadata = ResponseMetadata()
            metadata.contentLength = Int64(data.count)
            return .data(data, metadata)
        } catch {
            throw ImagePipelineError.fileUnreadable(path: path, reason: error.localizedDescription)
        }
    }
}
