import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Command {
    /// `imgpipe frames SOURCE --out-dir DIR [--size N] [--format pam|png]`
    static let frames = Command(
        name: "frames", synopsis: "SOURCE --out-dir DIR [--size N] [--format pam|png]",
        summary: "write every composited frame of an animation as DIR/frame-0000.pam, frame-0001.pam, …",
        positionals: .count(1...1), options: FramesOptions(),
        run: { options, invocation in
            guard let directory = invocation[options.outDirectory], !directory.isEmpty else {
                throw UsageError(message: "'imgpipe frames' needs --out-dir DIR")
            }
            let format = invocation[options.format] ?? "pam"
            let url = try Sources.url(invocation.positionals[0])
            var request = ImageRequest(url: url)
            if let size = invocation[options.size] {
                request = ImageRequest(url: url, width: size, height: size)
            }
            // Straight alpha, as the files store it: a full-size frame is written with its values exactly.
            request.processing.pixelFormat = .rgba8Straight
            let environment = try Environment(invocation, sources: [url])
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let animation = try await environment.pipeline.animation(for: request)
                var count = 0
                for try await frame in animation.frames() {
                    let path = PathText.appending(directory, printfFormat("frame-%04d.", frame.index) + format)
                    try OutputFormat.write(frame.bitmap, to: path)
                    count += 1
                }
                if environment.verbose {
                    print("\(Sources.label(url)): \(animation.format) \(animation.info.canvasSize) → \(animation.plan.outputSize), wrote \(count) frames to \(directory)")
                }
            } catch {
                printError("imgpipe: \(Sources.failure(error, for: url))")
                await environment.finish()
                return 1
            }
            await environment.finish()
            return 0
        })
}

/// `frames`' options.
struct FramesOptions: OptionGroup {
    let outDirectory = Option("out-dir", "DIR", .output, "the folder to write the frames to (created if missing)", .text)
    let size = Option("size", short: "s", "N", .size, "fit each frame inside N×N pixels (default: the canvas size)", .positiveInteger)
    let format = Option("format", "pam|png", .output, "pam (straight RGBA, the default) or png",
                        ValueParser { text, option in
                            let format = text.lowercased()
                            guard format == "pam" || format == "png" else { throw UsageError(message: "\(option) must be pam or png, got '\(format)'") }
                            return format
                        })
}
