// swift-tools-version:6.0
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode comes from `swiftLanguageModes`;
/// these add the upcoming-feature checks that keep imports and existentials honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// A C library wrapped as a `.systemLibrary` target: a module map, a `shim.h`,
/// the pkg-config name and the Debian package that provides it.
func cLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

var targets: [Target] = [
    .target(name: "PipelineCore"),

    cLibrary("CJPEG", pkgConfig: "libjpeg", apt: "libjpeg62-turbo-dev"),
    cLibrary("CPNG", pkgConfig: "libpng16", apt: "libpng-dev"),
    cLibrary("CWebP", pkgConfig: "libwebp", apt: "libwebp-dev"),
    cLibrary("CGIF", pkgConfig: "libgif", apt: "libgif-dev"),
    cLibrary("CLCMS2", pkgConfig: "lcms2", apt: "liblcms2-dev"),
    // No pkgConfig: librsvg-2.0.pc pulls in glib-2.0.pc, whose `-pthread` SwiftPM rejects with a
    // warning on every build; shim.h declares the few functions CodecSVG calls (checked against
    // the real headers by CodecSVGTests); CLazyLibraries opens librsvg (and with it GIO and cairo).
    .systemLibrary(name: "CRSVG", providers: [.apt(["librsvg2-dev"])]),
    // No pkgConfig: hiredis.pc's Cflags carry -D_FILE_OFFSET_BITS=64, which SwiftPM rejects with a
    // warning on every build; the headers are in /usr/include/hiredis and the module map links it.
    .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
    .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
    // The heavy libraries, opened on first use (as libvips loads its heavy loaders as modules):
    // their module maps have no `link` and no pkgConfig (whose --libs would link them), only the
    // types; CLazyLibraries holds generated trampolines of the functions we call, which dlopen the
    // library at the first call (scripts/gen-lazy-symbols). libheif's and libcurl's headers are on
    // the default search path.
    .systemLibrary(name: "CHEIF", providers: [.apt(["libheif-dev"])]),
    .systemLibrary(name: "CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
    .target(name: "CLazyLibraries"),
    // The Swift face of CLazyLibraries: load() with a typed MissingLibrary.
    .target(name: "LazyLibraries", dependencies: ["PipelineCore", "CLazyLibraries"]),
    // No pkgConfig: libjxl.pc's Cflags are only -I/usr/include (on the default path), and its
    // Requires.private pull libhwy's -DHWY_SHARED_DEFINE into --cflags, which CJXL's headers do
    // not use; CLazyLibraries opens libjxl and libjxl_threads.
    .systemLibrary(name: "CJXL", providers: [.apt(["libjxl-dev"])]),
    // No pkgConfig: libmicrohttpd.pc's Cflags add p11-kit's include folder, which the header does
    // not need; CLazyLibraries opens libmicrohttpd.
    .systemLibrary(name: "CMicroHTTPD", providers: [.apt(["libmicrohttpd-dev"])]),

    .target(name: "CJPEGShim", dependencies: ["CJPEG"]),
    .target(name: "CPNGShim", dependencies: ["CPNG"]),

    .target(name: "ColorManagement", dependencies: ["PipelineCore", "CLCMS2"]),
    .target(name: "CodecJPEG", dependencies: ["PipelineCore", "CJPEGShim", "ColorManagement"]),
    .target(name: "CodecPNG", dependencies: ["PipelineCore", "CPNGShim", "ColorManagement"]),
    .target(name: "CodecWebP", dependencies: ["PipelineCore", "CWebP", "ColorManagement"]),
    .target(name: "CodecHEIF", dependencies: ["PipelineCore", "CHEIF", "LazyLibraries", "ColorManagement"]),
    .target(name: "CodecGIF", dependencies: ["PipelineCore", "CGIF"]),
    // posix_spawn with every other descriptor closed (and its Swift face): the SVG worker and the
    // tests' child processes.
    .target(name: "CProcessSpawn"),
    .target(name: "ProcessSpawn", dependencies: ["CProcessSpawn"]),
    .target(name: "CodecSVG", dependencies: ["PipelineCore", "CRSVG", "LazyLibraries", "CProcessSpawn", "ProcessSpawn"]),
    // The SVG decoder's worker process (`SVGDecoder.Isolation`), for library users; imgpipe is its own.
    .executableTarget(name: "svg-worker", dependencies: ["CodecSVG"], path: "Sources/SVGWorker"),
    .target(name: "CodecJXL", dependencies: ["PipelineCore", "CJXL", "LazyLibraries", "ColorManagement"]),
    .target(name: "CCurlShim", dependencies: ["CCurl", "CLazyLibraries"]),
    .target(name: "LoaderHTTP", dependencies: ["PipelineCore", "CCurl", "CCurlShim", "LazyLibraries"]),
    .target(name: "LoaderFile", dependencies: ["PipelineCore"]),
    .target(name: "CDiskCacheShim"),
    .target(name: "CacheDisk", dependencies: ["PipelineCore", "CSQLite", "CDiskCacheShim"]),
    .target(name: "CacheRedis", dependencies: ["PipelineCore", "CHiredis"]),
    .target(name: "MemoryPressureLinux", dependencies: ["PipelineCore"]),
    // The image server's handler (no HTTP library in its API) and its libmicrohttpd transport.
    .target(name: "ImageServer", dependencies: ["PipelineCore"]),
    .target(name: "CMicroHTTPDShim", dependencies: ["CMicroHTTPD", "CLazyLibraries"]),
    .target(name: "ImageServerHTTP", dependencies: ["ImageServer", "PipelineCore", "CMicroHTTPD", "CMicroHTTPDShim", "LazyLibraries"]),
    // Faces for the crop anchor, on OpenCV's cascade classifier behind a C shim. Debian ships no
    // opencv4.pc, and OpenCV's headers include each other as "opencv2/…", so the shim's
    // `opencv4` is a symlink to /usr/include/opencv4 searched as a header path (unsafeFlags'
    // -I would refuse the package as a dependency); the three libraries are linked by name.
    // The shim is the FaceDetectionOpenCV plugin (a dynamic library product): FaceDetection does
    // not link it but dlopens it at the first search, so OpenCV (and its TBB, protobuf, BLAS,
    // X11…) reaches only a process that looks for faces. FaceDetection sees the shim's header
    // through CFaceDetectionABI, a module map with no `link`: types and constants, no symbols.
    .target(name: "CFaceDetectionShim",
            cxxSettings: [.headerSearchPath("opencv4")],
            linkerSettings: [.linkedLibrary("opencv_objdetect"), .linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core")]),
    .systemLibrary(name: "CFaceDetectionABI"),
    .target(name: "FaceDetection", dependencies: ["PipelineCore", "CFaceDetectionABI"]),
    .target(name: "ImagePipelineKit", dependencies: ["PipelineCore", "CodecJPEG", "CodecPNG", "CodecWebP", "CodecHEIF",
                                                   "CodecGIF", "CodecSVG", "CodecJXL", "LoaderFile", "LoaderHTTP", "CacheDisk"]),
    // Published test support: no Swift Testing or XCTest inside, so apps use it from either.
    .target(name: "ImagePipelineTesting", dependencies: ["PipelineCore"]),

    .target(name: "PipelineTestSupport", dependencies: ["PipelineCore", "ImagePipelineTesting", "CMemoryProbe", "CProcessSpawn",
                                                   "ProcessSpawn"],
            path: "Tests/PipelineTestSupport"),
    .testTarget(name: "PipelineCoreTests", dependencies: ["PipelineCore", "CacheDisk", "PipelineTestSupport"]),
    .testTarget(name: "MemoryPressureLinuxTests", dependencies: ["MemoryPressureLinux", "PipelineCore", "PipelineTestSupport"]),
    .executableTarget(name: "DiskCacheCrashWriter", dependencies: ["CacheDisk", "PipelineCore", "PipelineTestSupport"],
                      path: "Tests/DiskCacheCrashWriter"),
    .testTarget(name: "CacheDiskTests", dependencies: ["CacheDisk", "PipelineCore", "LoaderHTTP", "PipelineTestSupport",
                                                    "DiskCacheCrashWriter", "CodecPNG", "CodecJPEG", "CodecWebP", "CSQLite"]),
    .target(name: "CJPEGTestEncoder", dependencies: ["CJPEG"], path: "Tests/CJPEGTestEncoder"),
    .target(name: "CJPEGTestBuffered", dependencies: ["CJPEG"], path: "Tests/CJPEGTestBuffered"),
    .target(name: "CMemoryProbe", path: "Tests/CMemoryProbe"),
    .testTarget(name: "CodecJPEGTests", dependencies: ["CodecJPEG", "CJPEGTestEncoder", "CJPEGTestBuffered", "PipelineCore",
                                                    "PipelineTestSupport", "FuzzSupport"]),
    .testTarget(name: "CodecPNGTests", dependencies: ["CodecPNG", "PipelineCore", "PipelineTestSupport"]),
    .testTarget(name: "CodecWebPTests", dependencies: ["CodecWebP", "PipelineCore", "PipelineTestSupport"],
                exclude: ["Fixtures"]),
    .testTarget(name: "CodecHEIFTests", dependencies: ["CodecHEIF", "CodecPNG", "PipelineCore", "PipelineTestSupport"]),
    .testTarget(name: "CodecJXLTests", dependencies: ["CodecJXL", "CodecPNG", "PipelineCore", "PipelineTestSupport"]),
    .testTarget(name: "CodecSVGTests", dependencies: ["CodecSVG", "PipelineCore", "LoaderFile", "PipelineTestSupport", "svg-worker",
                                                   "CodecPNG"]),
    .target(name: "FuzzSupport", dependencies: ["PipelineCore", "PipelineTestSupport", "CMemoryProbe", "CodecJPEG", "CodecPNG", "CodecWebP", "CodecHEIF"],
            path: "Tests/FuzzSupport"),
    .testTarget(name: "FuzzTests", dependencies: ["FuzzSupport", "PipelineTestSupport"], exclude: ["Regressions"]),
    .executableTarget(name: "ImageFuzz", dependencies: ["FuzzSupport"], path: "Tests/ImageFuzz"),
    .testTarget(name: "ColorManagementTests", dependencies: ["ColorManagement", "CodecJPEG", "CodecPNG", "CodecWebP",
                                                          "CodecHEIF", "LoaderFile", "PipelineCore", "PipelineTestSupport", "CLCMS2", "CJPEGTestEncoder"]),
    // The GIF writer the GIF tests and SampleMaker both use: Foundation only, no Swift Testing.
    .target(name: "GIFFixtureWriter", path: "Tests/GIFFixtureWriter"),
    .testTarget(name: "CodecGIFTests", dependencies: ["CodecGIF", "CodecWebP", "CodecPNG", "LoaderFile", "PipelineCore",
                                                           "PipelineTestSupport", "GIFFixtureWriter"]),
    .testTarget(name: "ImgpipeTests", dependencies: ["imgpipe", "ImagePipelineKit", "PipelineCore", "PipelineTestSupport",
                                                  "CodecGIF", "GIFFixtureWriter", "FaceDetection"]),
    .testTarget(name: "CacheRedisTests", dependencies: ["CacheRedis", "CacheDisk", "PipelineCore", "LoaderHTTP", "CodecPNG", "PipelineTestSupport"]),
    .testTarget(name: "ImagePipelineKitTests", dependencies: ["ImagePipelineKit", "ImagePipelineTesting", "PipelineCore", "CacheDisk",
                                                            "LoaderFile", "PipelineTestSupport", "PNGFromFiles"],
                exclude: ["Fixtures"]),
    .testTarget(name: "LoaderHTTPTests", dependencies: ["PipelineCore", "CacheDisk", "LoaderHTTP", "LoaderFile", "CodecPNG", "CodecJPEG",
                                                      "PipelineTestSupport"],
                exclude: ["Fixtures"]),
    .testTarget(name: "ImageServerTests", dependencies: ["ImageServer", "ImagePipelineKit", "PipelineCore", "PipelineTestSupport"]),
    .testTarget(name: "ImageServerHTTPTests", dependencies: ["ImageServerHTTP", "ImageServer", "PipelineTestSupport"]),
    .testTarget(name: "FaceDetectionTests", dependencies: ["FaceDetection", "PipelineCore", "CodecJPEG", "CodecPNG", "LoaderFile",
                                                         "PipelineTestSupport"]),
    .testTarget(name: "LoaderFileTests", dependencies: ["PipelineCore", "LoaderFile", "CodecPNG", "PipelineTestSupport"]),

    // The codecs, loaders and disk cache come through the kit (its registries are imgpipe's list of them).
    .executableTarget(name: "imgpipe", dependencies: ["PipelineCore", "ImagePipelineKit", "ImageServer", "ImageServerHTTP", "CacheRedis",
                                                  "FaceDetection"]),

    .executableTarget(name: "PNGFromFiles", dependencies: ["PipelineCore", "CodecPNG", "LoaderFile"],
                      path: "Examples/PNGFromFiles"),
    .executableTarget(name: "JPEGOverHTTP", dependencies: ["PipelineCore", "CodecJPEG", "LoaderHTTP", "CacheDisk"],
                      path: "Examples/JPEGOverHTTP"),
    .executableTarget(name: "CustomLoader", dependencies: ["PipelineCore", "CodecPNG"], path: "Examples/CustomLoader"),
    .target(name: "QOIExample", dependencies: ["PipelineCore"], path: "Examples/CustomDecoder/QOI"),
    .executableTarget(name: "CustomDecoder", dependencies: ["PipelineCore", "CodecJPEG", "LoaderFile", "QOIExample"],
                      path: "Examples/CustomDecoder/App"),
    .testTarget(name: "PluginTests", dependencies: ["QOIExample", "PipelineCore", "CodecJPEG", "CodecPNG", "PipelineTestSupport"],
                exclude: ["Fixtures"]),
    .executableTarget(name: "FlingGrid", dependencies: ["PipelineCore", "CodecPNG", "LoaderHTTP"], path: "Examples/FlingGrid"),
    .executableTarget(name: "SampleMaker", dependencies: ["PipelineCore", "CodecPNG", "GIFFixtureWriter"], path: "scripts/SampleMaker"),
]

for index in targets.indices where targets[index].type != .system && targets[index].name != "CCurlShim"
    && targets[index].name != "CMicroHTTPDShim" && targets[index].name != "CDiskCacheShim"
    && targets[index].name != "CFaceDetectionShim" && targets[index].name != "CLazyLibraries" {
    targets[index].swiftSettings = (targets[index].swiftSettings ?? []) + strictSettings
}

let package = Package(
    name: "ImagePipeline",
    // `Mutex` (Synchronization) sets the floor. Tested on Linux only; these are the platforms
    // the code is written to build on, not platforms CI runs.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "PipelineCore", targets: ["PipelineCore"]),
        .library(name: "CodecJPEG", targets: ["CodecJPEG"]),
        .library(name: "CodecPNG", targets: ["CodecPNG"]),
        .library(name: "CodecWebP", targets: ["CodecWebP"]),
        .library(name: "CodecHEIF", targets: ["CodecHEIF"]),
        .library(name: "ColorManagement", targets: ["ColorManagement"]),
        .library(name: "CodecGIF", targets: ["CodecGIF"]),
        .library(name: "CodecSVG", targets: ["CodecSVG"]),
        .library(name: "CodecJXL", targets: ["CodecJXL"]),
        .library(name: "LoaderHTTP", targets: ["LoaderHTTP"]),
        .library(name: "LoaderFile", targets: ["LoaderFile"]),
        .library(name: "CacheDisk", targets: ["CacheDisk"]),
        .library(name: "CacheRedis", targets: ["CacheRedis"]),
        .library(name: "MemoryPressureLinux", targets: ["MemoryPressureLinux"]),
        .library(name: "ImageServer", targets: ["ImageServer"]),
        .library(name: "ImageServerHTTP", targets: ["ImageServerHTTP"]),
        .library(name: "ImagePipelineKit", targets: ["ImagePipelineKit"]),
        .library(name: "FaceDetection", targets: ["FaceDetection"]),
        // FaceDetection's OpenCV plugin, loaded at the first face search from beside the executable.
        .library(name: "FaceDetectionOpenCV", type: .dynamic, targets: ["CFaceDetectionShim"]),
        .library(name: "ImagePipelineTesting", targets: ["ImagePipelineTesting"]),
        .executable(name: "imgpipe", targets: ["imgpipe"]),
        .executable(name: "svg-worker", targets: ["svg-worker"]),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
