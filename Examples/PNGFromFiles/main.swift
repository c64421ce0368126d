// PNGFromFiles: the smallest useful app — PipelineCore + CodecPNG + LoaderFile, nothing else.
// It links neither libjpeg nor libcurl (check: ldd .build/release/PNGFromFiles).
//
//   swift run PNGFromFiles [PNG...]     (default: the bundled PNG samples)
//
// Loads each PNG through the pipeline at 128 px (decoded while shrinking, never at full
// size), asks again to show the memory cache answering, and writes the thumbnails next to
// the current directory as *-thumb.png.
import CodecPNG
import LoaderFile
import PipelineCore

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

let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry().registering(PNGDecoder()),
    loaders: LoaderRegistry().registering(FileDataLoader())))

var paths = Array(CommandLine.arguments.dropFirst())
if paths.isEmpty {
    let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples")
    paths = ((try? FileManager.default.contentsOfDirectory(atPath: samples.path)) ?? [])
        .filter { $0.hasSuffix(".png") }.sorted().map { samples.appendingPathComponent($0).standardizedFileURL.path }
}

var failures = 0
for path in paths {
    let request = ImageRequest(url: URL(fileURLWithPath: path), width: 128, height: 128)
    do {
        let response = try await pipeline.image(for: request)
        let again = try await pipeline.image(for: request)
        let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent + "-thumb.png"
        try PNGEncoder().encode(response.bitmap).write(to: URL(fileURLWithPath: name))
        print("\(path): \(response.originalSize) → \(response.bitmap.size) from \(response.source), then from \(again.source); wrote \(name)")
    } catch {
        failures += 1
        print("\(path): \(error)")
    }
}
exit(failures == 0 ? 0 : 1)
