import Foundation
import LoaderFile
import PipelineCore
import Testing

/// `local:///` below one folder: what an image server's sources may read, and nothing beside it.
@Suite("RootedFileLoader")
struct RootedFileLoaderTests {
    /// A served folder with `photos/a.bin` inside, and `secret.bin` beside the folder (outside it).
    private struct Layout {
        let base: URL
        let root: URL
        let inside = Data("inside".utf8)
        let outside = Data("outside-secret".utf8)

        init() throws {
            base = FileManager.default.temporaryDirectory.appendingPathComponent("rooted-\(UUID().uuidString)")
            root = base.appendingPathComponent("served")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("photos"), withIntermediateDirectories: true)
            try inside.write(to: root.appendingPathComponent("photos/a.bin"))
            try outside.write(to: base.appendingPathComponent("secret.bin"))
        }

        func remove() { try? FileManager.default.removeItem(at: base) }
    }

    private func load(_ loader: RootedFileLoader, _ text: String) async throws -> Data {
        let url = try #require(URL(string: text))
        guard case .data(let data, _) = try await loader.load(DataLoadRequest(url: url)) else {
            Issue.record("answered notModified")
            return Data()
        }
        return data
    }

    @Test func readsFilesBelowTheRoot() async throws {
        let layout = try Layout()
        defer { layout.remove() }
        let loader = try RootedFileLoader(root: layout.root)
        #expect(loader.schemes == ["local"])
        #expect(try await load(loader, "local:///photos/a.bin") == layout.inside)
        // Percent-encoded plain names are names.
        #expect(try await load(loader, "local:///photos/%61.bin") == layout.inside)
    }

    @Test(arguments: [
        "local:///../secret.bin",
        "local:///photos/../../secret.bin",
        "local:///%2e%2e/secret.bin",
        "local:///photos%2F..%2F..%2Fsecret.bin",
        "local:///photos/..%5C..%5Csecret.bin",
        "local:///photos/a.bin%00.jpg",
        "local:///./photos/a.bin",
        "local://host/photos/a.bin",
        "local:///",
        "file:///etc/passwd",
    ])
    func refusesPathsThatLeaveOrBendTheRoot(_ text: String) async throws {
        let layout = try Layout()
        defer { layout.remove() }
        let loader = try RootedFileLoader(root: layout.root)
        do {
            _ = try await load(loader, text)
            Issue.record("\(text) was read")
        } catch let refusal as RootedFileLoader.Refusal {
            #expect(ImagePipelineError.Kind(refusal) == .refused)
            #expect(!refusal.description.contains("outside-secret"))
            #expect(!refusal.description.contains(layout.base.path), "the message names the URL, not the server's folder")
        }
    }

    @Test func refusesSymbolicLinksThatLeadOutButFollowThoseThatStayIn() async throws {
        let layout = try Layout()
        defer { layout.remove() }
        let files = FileManager.default
        try files.createSymbolicLink(at: layout.root.appendingPathComponent("out.bin"), withDestinationURL: layout.base.appendingPathComponent("secret.bin"))
        try files.createSymbolicLink(at: layout.root.appendingPathComponent("up"), withDestinationURL: layout.base)
        try files.createSymbolicLink(at: layout.root.appendingPathComponent("in.bin"), withDestinationURL: layout.root.appendingPathComponent("photos/a.bin"))
        let loader = try RootedFileLoader(root: layout.root)
        for text in ["local:///out.bin", "local:///up/secret.bin"] {
            await #expect(throws: RootedFileLoader.Refusal.self, "\(text)") { _ = try await load(loader, text) }
        }
        #expect(try await load(loader, "local:///in.bin") == layout.inside)
    }

    @Test func aMissingFileIsNotFoundNamingTheLocalURL() async throws {
        let layout = try Layout()
        defer { layout.remove() }
        let loader = try RootedFileLoader(root: layout.root)
        do {
            _ = try await load(loader, "local:///photos/none.jpg")
            Issue.record("a missing file was read")
        } catch let error as ImagePipelineError {
            #expect(error.kind == .notFound)
            #expect(error.description.contains("local:///photos/none.jpg"))
            #expect(!error.description.contains(layout.base.path))
        }
    }

    @Test func aRootThatIsNotAFolderIsRefusedAtOnce() throws {
        let layout = try Layout()
        defer { layout.remove() }
        #expect(throws: ImagePipelineError.self) { try RootedFileLoader(root: layout.base.appendingPathComponent("secret.bin")) }
        #expect(throws: ImagePipelineError.self) { try RootedFileLoader(root: layout.base.appendingPathComponent("none")) }
    }
}
