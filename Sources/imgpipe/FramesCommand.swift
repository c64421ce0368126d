import Foundation
import PipelineCore

extension Command {
    /// `imgpipe frames SOURCE --out-dir DIR [--size N] [--format pam|png]`
    static let frames = Command(
        name: "frames", synopsis: "SOURCE --out-dir DIR [--size N] [--format pam|png]",
        summary: "write every composited frame of an animation as DIR/frame-0000.pam, frame-0001.pam, …",
        positionals: 1...1,
        options: [.value("out-dir", "DIR", "the folder to write the frames to (created if missing)"),
                  .value("size", "N", "fit each frame inside N×N pixels (default: the canvas size)"),
                  .value("format", "pam|png", "pam (straight RGBA, the default) or png")],
        run: { invocation in
            guard let directory = invocation.options["out-dir"], !directory.isEmpty else {
                throw UsageError(message: "'imgpipe frames' needs --out-dir DIR")
            }
            let format = invocation.options["format"]?.lowercased() ?? "pam"
            guard format == "pam" || format == "png" else {
                throw UsageError(message: "--format must be pam or png, got '\(format)'")
            }
            let url = try Sources.url(invocation.positionals[0])
            var request = ImageRequest(url: url)
            if invocation.options["size"] != nil {
                let size = try invocation.positiveInteger("size")
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
                    let path = (directory as NSString).appendingPathComponent(String(format: "frame-%04d.%@", frame.index, format))
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
