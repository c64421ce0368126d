import CodecSVG
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PipelineCore
import PipelineTestSupport
import Testing

/// Untrusted by default: a document that points at a loopback HTTP server and at local files in
/// every way SVG can (`<image href>` and `xlink:href`, `<use>` of another document, CSS
/// `@import`, an external DTD and an external entity) makes no request to the server (its hit
/// counts stay 0) and opens none of the files (inotify sees no open of them; the test's own read
/// afterwards shows the watch works, and so does rsvg-convert's, which given the document as a
/// file has a base and loads the image and stylesheet beside it), and draws exactly what the same document
/// draws without those references.
@Suite(.timeLimit(.minutes(2)), .tags(.cpuBound))
struct SVGIsolationTests {
    static let red = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"32\" height=\"32\" id=\"a\"><rect id=\"r\" width=\"32\" height=\"32\" fill=\"red\"/></svg>"

    /// Every kind of external reference SVG has, but entities: librsvg draws it without them.
    static func document(server: URL, folder: URL) -> String {
        let file = folder.appendingPathComponent("secret.svg").path
        return """
            <?xml version="1.0"?>
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="32" height="32">
              <style>@import url("\(server.absoluteString)/import.css"); @import url("file://\(folder.path)/secret.css");</style>
              <rect width="32" height="32" fill="#204a87"/>
              <image href="\(server.absoluteString)/image.svg" width="32" height="32"/>
              <image xlink:href="\(server.absoluteString)/xlink.svg" width="32" height="32"/>
              <image href="//127.0.0.1:\(server.port ?? 0)/relative.svg" width="32" height="32"/>
              <image href="file://\(file)" width="32" height="32"/>
              <image xlink:href="\(file)" width="32" height="32"/>
              <use href="\(server.absoluteString)/use.svg#r"/>
              <use xlink:href="file://\(file)#r"/>
              <rect x="8" y="8" width="16" height="16" fill="#4e9a06"/>
            </svg>
            """
    }

    /// External entities and an external DTD (XXE): an error (the entity is undefined) or the
    /// document without them; never the file's or the server's content.
    static func entities(server: URL, folder: URL) -> String {
        """
        <?xml version="1.0"?>
        <!DOCTYPE svg SYSTEM "\(server.absoluteString)/dtd.dtd" [
          <!ENTITY secret SYSTEM "file://\(folder.appendingPathComponent("secret.txt").path)">
          <!ENTITY remote SYSTEM "\(server.absoluteString)/entity.txt">
          <!ENTITY % parameter SYSTEM "\(server.absoluteString)/parameter.dtd">
          %parameter;
        ]>
        <svg xmlns="http://www.w3.org/2000/svg" width="32" height="32">
          <title>&secret;&remote;</title>
          <rect width="32" height="32" fill="#204a87"/>
          <rect x="8" y="8" width="16" height="16" fill="#4e9a06"/>
        </svg>
        """
    }

    static let control = """
        <svg xmlns="http://www.w3.org/2000/svg" width="32" height="32">
          <rect width="32" height="32" fill="#204a87"/>
          <rect x="8" y="8" width="16" height="16" fill="#4e9a06"/>
        </svg>
        """

    @Test func noConnectionIsMadeAndNoFileOpened() async throws {
        try await withTemporaryDirectory(prefix: "svg-isolation") { (folder: URL) async throws in
            for name in ["secret.svg", "secret.css"] { try Data(Self.red.utf8).write(to: folder.appendingPathComponent(name)) }
            try Data("rect { fill: red }".utf8).write(to: folder.appendingPathComponent("secret.css"))
            try Data("secret".utf8).write(to: folder.appendingPathComponent("secret.txt"))
            try await withFixtureServer { server in
                let watch = try FileOpenWatch(folder)
                defer { watch.close() }
                let data = Data(Self.document(server: server.baseURL, folder: folder).utf8)
                let entities = Data(Self.entities(server: server.baseURL, folder: folder).utf8)
                // In this process, and in a worker process (imgpipe's way) when svg-worker is built.
                let worker = SVGDecoder(isolation: .worker(SVGWorker(executable: svgWorkerExecutable.path)))
                let decoders = ExternalTool.exists(svgWorkerExecutable.path) ? [SVGDecoder(), worker] : [SVGDecoder()]
                for size in [nil, PixelSize(width: 64, height: 64), PixelSize(width: 512, height: 512)] {
                    for decoder in decoders {
                        let options = DecodeOptions(targetSize: size)
                        let control = try SVGDecoder().decode(Data(Self.control.utf8), options: options).bitmap
                        #expect(try decoder.decode(data, options: options).bitmap == control)
                        do {
                            #expect(try decoder.decode(entities, options: options).bitmap == control)
                        } catch let error as ImagePipelineError {
                            guard case .corruptData(.svg?, let message) = error else { throw error }
                            #expect(message.contains("not defined") || message.contains("not found"), "\(message)")
                        }
                    }
                }
                #expect(watch.opened() == [], "librsvg opened files of \(folder.path)")
                let stats = try await server.stats()
                for path in ["/dtd.dtd", "/entity.txt", "/parameter.dtd", "/import.css", "/image.svg", "/xlink.svg",
                             "/relative.svg", "/use.svg"] {
                    #expect(stats.hits[path] ?? 0 == 0, "\(path) was requested")
                }
                #expect(stats.log.isEmpty, "requests: \(stats.log)")
                // The watch sees an open: this test's own.
                _ = try Data(contentsOf: folder.appendingPathComponent("secret.svg"))
                #expect(watch.opened() == ["secret.svg"])
                // And librsvg's, given a base file: rsvg-convert reads the document from the folder,
                // and so loads the image and the stylesheet beside it. Without a base (CodecSVG), neither.
                let rsvg = URL(fileURLWithPath: "/usr/bin/rsvg-convert")
                if FileManager.default.isExecutableFile(atPath: rsvg.path) {
                    let document = folder.appendingPathComponent("document.svg")
                    try data.write(to: document)
                    _ = watch.opened()
                    _ = try ExternalTool.runBlocking(rsvg.path, [document.path])
                    #expect(watch.opened() == ["document.svg", "secret.css", "secret.svg"], "rsvg-convert with a base file")
                }
            }
        }
    }
}

/// The names of files in one folder that were opened since the last call, by inotify: the
/// kernel queues an event as each `open` happens, so once a decode has returned every open it
/// made is in the queue (no waiting).
final class FileOpenWatch {
    private let fd: Int32

    init(_ folder: URL) throws {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard inotify_add_watch(fd, folder.path, UInt32(IN_OPEN)) >= 0 else {
            Glibc.close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
    }

    /// The names opened since the last call (each once, sorted).
    func opened() -> [String] {
        var names: Set<String> = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + 16 <= count {
                let length = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)) }
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
                if !nameBytes.isEmpty { names.insert(String(decoding: nameBytes, as: UTF8.self)) }
                offset += 16 + length
            }
        }
        return names.sorted()
    }

    func close() { Glibc.close(fd) }
}
