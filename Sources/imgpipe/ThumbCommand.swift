import CodecJPEG
import CodecPNG
import Foundation
import PipelineCore

extension Command {
    /// `imgpipe thumb SOURCE --size N --out FILE.png|FILE.pam`: a thumbnail fitting N×N.
    static let thumb = Command(
        name: "thumb",
        positionals: ["SOURCE"],
        options: [
            OptionSpec(name: "size", valueName: "N", help: "fit inside N×N pixels", required: true),
            OptionSpec(name: "out", valueName: "FILE", help: "where to write it; .png or .pam", required: true),
        ],
        summary: "decode SOURCE (a local file) through the pipeline into a thumbnail",
        run: { invocation in
            let size = try invocation.positiveInteger("size")
            let output = invocation.options["out"] ?? ""
            guard let writer = OutputFormat(path: output) else {
                throw UsageError(message: "--out must end in .png or .pam: '\(output)'")
            }
            let source = URL(fileURLWithPath: invocation.positionals[0])
            let pipeline = ImagePipeline(configuration: .imgpipe)
            let response = try await pipeline.image(for: ImageRequest(url: source, width: size, height: size))
            for warning in response.warnings {
                FileHandle.standardError.write(Data("imgpipe: warning: \(warning)\n".utf8))
            }
            try writer.write(response.bitmap, to: URL(fileURLWithPath: output))
        }
    )
}

extension ImagePipeline.Configuration {
    /// imgpipe's pipeline: the JPEG and PNG decoders and a local-file loader; no caches worth
    /// keeping across one run, so a small memory cache.
    static var imgpipe: ImagePipeline.Configuration {
        ImagePipeline.Configuration(
            decoders: DecoderRegistry().registering(JPEGDecoder()).registering(PNGDecoder()),
            loaders: LoaderRegistry().registering(LocalFileLoader()),
            memoryCache: MemoryCache(),
            negativeCacheLifetime: 0)
    }
}

/// The formats `--out` can write, by file extension.
enum OutputFormat {
    case png, pam

    init?(path: String) {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "png": self = .png
        case "pam": self = .pam
        default: return nil
        }
    }

    func write(_ bitmap: Bitmap, to url: URL) throws {
        let data: Data
        switch self {
        case .png: data = try PNGEncoder().encode(bitmap)
        case .pam:
            // Netpbm PAM, straight (not premultiplied) RGBA, as `dwebp -pam` writes.
            let header = "P7\nWIDTH \(bitmap.width)\nHEIGHT \(bitmap.height)\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n"
            data = Data(header.utf8) + Data(bitmap.unpremultipliedBytes())
        }
        do {
            try data.write(to: url, options: .atomic)
        } catch {
            throw ImagePipelineError.fileUnreadable(path: url.path, reason: "cannot write: \(error.localizedDescription)")
        }
    }
}
