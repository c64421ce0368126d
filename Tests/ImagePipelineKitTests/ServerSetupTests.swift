import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a pipeline built by the kit for a server reads (issue 41): only the schemes it was
/// given. A `file:` URL a client sends is refused before anything is opened, and no message
/// quotes a local source's bytes.
@Suite("Server setups")
struct ServerSetupTests {
    @Test func aServerPolicyLoadsNoLocalSchemeUnlessAsked() throws {
        let app = try ImagePipeline.Configuration.standard(diskCache: .none)
        #expect(app.loaders.schemes == ["http", "https", "file", "data"])
        let server = try ImagePipeline.Configuration.standard(diskCache: .none, connectionPolicy: .publicOnly)
        #expect(server.loaders.schemes == ["http", "https"])
        let files = try ImagePipeline.Configuration.standard(diskCache: .none, connectionPolicy: .publicOnly, localSources: .files)
        #expect(files.loaders.schemes == ["http", "https", "file"])
        let none = try ImagePipeline.Configuration.standard(diskCache: .none, localSources: [])
        #expect(none.loaders.schemes == ["http", "https"])
    }

    #if canImport(Glibc)
    /// The refused `file:` URL names a file this test owns and watches with inotify: the
    /// pipeline fails with `noLoader` and the file is never opened (no `IN_OPEN`, no
    /// `IN_ACCESS`). The same watch sees an app's pipeline open it, so the check can fail.
    @Test func aRefusedFileURLIsNeverOpened() async throws {
        try await withTemporaryDirectory(prefix: "ServerSetup") { folder in
            let file = folder.appendingPathComponent("secret.txt")
            try Data("root:$6$not-a-picture\n".utf8).write(to: file)
            let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            try #require(watch >= 0)
            defer { close(watch) }
            try #require(inotify_add_watch(watch, file.path, UInt32(IN_OPEN | IN_ACCESS)) >= 0)
            func events() -> Int {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
                return max(0, count)
            }

            let server = try ImagePipeline.standard(diskCache: .none, connectionPolicy: .publicOnly)
            let error = try await #require(throws: ImagePipelineError.self) { try await server.image(for: ImageRequest(url: file)) }
            #expect(error.description.hasSuffix("no data loader is registered for the URL scheme 'file'"), "\(error)")
            #expect(events() == 0, "the refused file was opened or read")

            let app = try ImagePipeline.standard(diskCache: .none)
            let appError = try await #require(throws: ImagePipelineError.self) { try await app.image(for: ImageRequest(url: file)) }
            #expect(events() > 0, "an app's pipeline reads files: the watch must see it")
            // Not a picture: the message does not quote the file's first bytes.
            #expect(!appError.description.contains("root"), "\(appError)")
            #expect(appError.description.hasSuffix("the data is not in any image format known to the pipeline"), "\(appError)")
        }
    }
    #endif

    /// A `data:` URL that is not a picture fails without its bytes in the message (an HTTP
    /// body's are still described: `SourceLabelTests`).
    @Test func aDataURLIsNotQuoted() async throws {
        let app = try ImagePipeline.standard(diskCache: .none)
        let url = try #require(URL(string: "data:text/plain,root%3Ax%3A0%3A0"))
        let error = try await #require(throws: ImagePipelineError.self) { try await app.image(for: ImageRequest(url: url)) }
        #expect(error.description.hasSuffix("the data is not in any image format known to the pipeline"), "\(error)")
    }
}
