// swift-tools-version:6.0
import Foundation
import PackageDescription

// The benchmarks, apart from the library so that building and testing it builds none of them.
// They use the library's public products only, as an app would. Run by the drivers beside this
// file (`Benchmarks/*.sh`); see Benchmarks/README.md.

/// The same settings as the library's (../Package.swift): Swift 6 mode comes from
/// `swiftLanguageModes`; these add the upcoming-feature checks that keep imports and existentials honest.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// The library's package identity: a path dependency is known by its folder's name, which is
/// the checkout's (`ImagePipeline`, `wt-bench`, ...), not the name in its manifest.
let library = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

/// A benchmark executable in Sources/<name>, linking these products of the library.
func benchmark(_ name: String, _ products: [String], other: [Target.Dependency] = []) -> Target {
    .executableTarget(name: name, dependencies: products.map { .product(name: $0, package: library) } + other,
                      swiftSettings: strictSettings)
}

let package = Package(
    name: "ImagePipelineBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        benchmark("HTTPBenchmark", ["PipelineCore", "LoaderHTTP"]),
        benchmark("MemoryCacheBenchmark", ["PipelineCore"]),
        benchmark("ColorBenchmark", ["PipelineCore", "CodecJPEG", "CodecPNG", "CodecWebP", "CodecHEIF", "ColorManagement"]),
        benchmark("ProcessorBenchmark", ["PipelineCore", "CacheDisk", "CodecJPEG", "CodecPNG", "CodecWebP", "LoaderFile"]),
        benchmark("DiskCacheBenchmark", ["PipelineCore", "CacheDisk"]),
        benchmark("DecodeMemoryBenchmark", ["PipelineCore", "CodecJPEG", "CodecPNG", "CodecWebP", "CodecHEIF", "CodecGIF"],
                  other: ["CMallocTuning"]),
        benchmark("EncoderBenchmark", ["PipelineCore", "CodecPNG", "CodecWebP", "CodecHEIF"]),
        benchmark("MemoryPressureDemo", ["PipelineCore", "MemoryPressureLinux"]),
        benchmark("JPEGEncoderBenchmark", ["PipelineCore", "CodecJPEG", "CodecPNG"]),
        benchmark("FleetBenchmark", ["PipelineCore", "LoaderHTTP", "CacheRedis", "CacheDisk", "CodecPNG"]),
        benchmark("PreviewBenchmark", ["PipelineCore", "LoaderHTTP", "CacheDisk", "CodecJPEG"]),
        benchmark("FirstPictureBenchmark", ["PipelineCore", "CodecJPEG", "LoaderFile"]),
        benchmark("LoadBenchmark", ["PipelineCore", "LoaderHTTP", "CacheRedis", "CacheDisk", "CodecPNG"]),
        benchmark("OrientationBenchmark", ["PipelineCore", "CodecJPEG", "LoaderFile"]),
        benchmark("SVGIsolationBenchmark", ["PipelineCore", "CodecSVG"]),
        // glibc's mallopt for DecodeMemoryBenchmark's peak-RSS measurements.
        .target(name: "CMallocTuning"),
    ],
    swiftLanguageModes: [.v6]
)
