import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

/// The heavy C libraries (libheif with dav1d, librsvg with cairo and GLib, libjxl, libcurl,
/// libmicrohttpd) reach a process only on first use (CLazyLibraries' trampolines): imgpipe does
/// not link them, a process that converts a PNG never maps them, one that decodes their format
/// does, and a missing one is a typed error naming the package to install. Each conversion runs
/// in a fresh child of the test binary (an exit test), whose maps are its own.
@Suite("Lazy loading")
struct LazyLoadingTests {
    /// What the lazily loaded libraries are called in `ldd` output and in `/proc/self/maps`.
    static let lazyLibraries = ["libheif.so", "libdav1d.so", "libde265.so", "librsvg-2.so", "libcairo.so", "libglib-2.0.so", "libgio-2.0.so",
                                "libjxl.so", "libjxl_threads.so", "libcurl.so", "libmicrohttpd.so"]

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The shared objects of `/proc/self/maps` that are lazily loaded libraries. Read to its
    /// end (`readWholeFile`): the file reports size 0, and `String(contentsOfFile:)` stops early.
    static func mappedLazyLibraries() throws -> [String] {
        guard let bytes = readWholeFile("/proc/self/maps") else { throw CocoaError(.fileReadUnknown) }
        let maps = String(decoding: bytes, as: UTF8.self)
        return lazyLibraries.filter { maps.contains("/" + $0) }
    }

    /// Converts `path` (relative to the package root, or absolute) to a 64-px PNG and JPEG
    /// through the standard pipeline and registries.
    static func convert(_ path: String) async throws {
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : root.appendingPathComponent(path)
        let pipeline = try ImagePipeline.standard(diskCache: .none)
        let response = try await pipeline.image(for: ImageRequest(url: url, width: 64, height: 64))
        _ = try EncoderRegistry.standard.encode(response.bitmap, as: .png)
        _ = try EncoderRegistry.standard.encode(response.bitmap, as: .jpeg)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd"), "ldd is not installed: skipped"))
    func neitherImgpipeNorTheTestsLinkTheHeavyLibraries() throws {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let imgpipe = try #require([directory, directory.deletingLastPathComponent()].map { $0.appendingPathComponent("imgpipe") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }, "imgpipe is not beside the test bundle (\(directory.path))")
        // The test binary too: its exit tests' children would otherwise map them at start.
        for binary in [imgpipe.path, CommandLine.arguments[0]] {
            let ldd = try ExternalTool.runBlocking("/usr/bin/ldd", [binary])
            #expect(ldd.status == 0)
            #expect(ldd.stdout.contains("libpng"), "the eager codecs are linked: \(ldd.stdout)")
            let linked = Self.lazyLibraries.filter { ldd.stdout.contains($0) }
            #expect(linked.isEmpty, "\(binary) links \(linked), which it should open on first use")
        }
    }

    @Test func convertingAPNGNeverLoadsTheHeavyLibraries() async {
        await #expect(processExitsWith: .success) {
            #expect(try LazyLoadingTests.mappedLazyLibraries().isEmpty, "before")
            try await LazyLoadingTests.convert("Samples/aurora.png")
            try await LazyLoadingTests.convert("Samples/mandelbrot.jpg")
            let mapped = try LazyLoadingTests.mappedLazyLibraries()
            if !mapped.isEmpty { exit(1) }  // a failed #expect in the child does not fail the exit status
        }
    }

    /// The control: decoding each heavy format maps its library (and only after the decode).
    @Test(.enabled(if: Corpus.has("heif") && Corpus.has("jxl") && Corpus.has("svg"), Corpus.missing("heif, jxl or svg")))
    func decodingTheirFormatLoadsThem() async {
        await #expect(processExitsWith: .success) {
            let corpus = Corpus.root.path
            let cases = [("heif/example.heic", ["libheif.so", "libdav1d.so", "libde265.so"]), ("jxl/photo-d1.jxl", ["libjxl.so", "libjxl_threads.so"]),
                         ("svg/tango-system-log-out.svg", ["librsvg-2.so", "libcairo.so", "libglib-2.0.so"])]
            for (index, (file, libraries)) in cases.enumerated() {
                guard Set(libraries).isDisjoint(with: try LazyLoadingTests.mappedLazyLibraries()) else { exit(10 + Int32(index)) }
                try await LazyLoadingTests.convert(corpus + "/" + file)
                guard Set(libraries).isSubset(of: try LazyLoadingTests.mappedLazyLibraries()) else { exit(20 + Int32(index)) }
            }
        }
    }

    /// A library that cannot be opened (`IMGPIPE_SONAME_LIBHEIF` names a file that is not there,
    /// read at the first load) fails the decode with the typed error naming the Debian package,
    /// every time, and leaves the other codecs working.
    @Test(.enabled(if: Corpus.has("heif"), Corpus.missing("heif")))
    func aMissingLibraryIsATypedErrorNamingThePackage() async {
        await #expect(processExitsWith: .success) {
            setenv("IMGPIPE_SONAME_LIBHEIF", "libimgpipe-absent.so.1", 1)
            let data = try Data(contentsOf: Corpus.folder("heif").appendingPathComponent("example.heic"))
            for _ in 0..<2 {
                do {
                    _ = try HEIFDecoder().decode(data, options: DecodeOptions())
                    exit(2)
                } catch ImagePipelineError.libraryUnavailable(let missing) {
                    guard missing.library == "libheif", missing.package == "libheif1", missing.soname == "libimgpipe-absent.so.1",
                          missing.reason.contains("libimgpipe-absent.so.1"), "\(missing)".contains("install the package libheif1")
                    else { exit(3) }
                }
            }
            do {
                _ = try HEIFEncoder.heic.encode(Bitmap(zeroed: PixelSize(width: 2, height: 2)),
                                                options: EncodeOptions())
                exit(4)
            } catch EncodingError.libraryUnavailable(.heif, let missing) {
                guard missing.package == "libheif1" else { exit(5) }
            }
            guard try LazyLoadingTests.mappedLazyLibraries().isEmpty else { exit(6) }
            try await LazyLoadingTests.convert("Samples/aurora.png")
        }
    }

    /// The same for libcurl at the HTTP loader's first request (refused before any connection).
    @Test func aMissingLibcurlFailsTheRequestNamingThePackage() async {
        await #expect(processExitsWith: .success) {
            setenv("IMGPIPE_SONAME_LIBCURL", "libimgpipe-absent.so.4", 1)
            let url = try #require(URL(string: "http://127.0.0.1:9/picture.png"))
            do {
                _ = try await HTTPDataLoader().load(DataLoadRequest(url: url))
                exit(2)
            } catch HTTPError.libraryUnavailable(let missing) {
                guard missing.library == "libcurl", missing.package == "libcurl4", HTTPError.libraryUnavailable(missing).isPermanent
                else { exit(3) }
            }
            guard try LazyLoadingTests.mappedLazyLibraries().isEmpty else { exit(4) }
        }
    }
}
