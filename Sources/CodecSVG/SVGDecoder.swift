import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ImageFormat {
    /// SVG (`image/svg+xml`), plain or gzip-compressed (`.svgz`): a vector format, drawn at the
    /// size asked for (`ImageInfo.isVector`).
    public static let svg = ImageFormat("svg", mimeType: "image/svg+xml", fileExtension: "svg")
}

/// SVG and SVGZ on librsvg 2.54 with cairo: each picture drawn straight at the size the
/// pipeline asks for (a 16-pixel icon thumbnailed at 512 is drawn at 512, sharp), treating every
/// document as untrusted.
///
/// - Recognised by its root element (``canDecode(_:)``): XML whose root is `svg`, after a byte
///   order mark, XML declaration, comments or DOCTYPE; gzip data whose inflated start is that.
///   No other XML is taken.
/// - `ImageInfo.size` is the natural size at 96 dpi (fractional sizes rounded
///   up, as `rsvg-convert` does); a document with a `viewBox` and no absolute `width`/`height`
///   is as large as its `viewBox`; one with neither is ``defaultSize``.
/// - No file or network access, ever: the document is loaded from memory with no base URL, so
///   librsvg loads no external reference (only `data:` URLs); external entities are not
///   loaded; libxml2's entity-amplification and depth limits stay on; the canvas is bounded
///   by the pipeline's pixel limit before it is allocated (and by cairo's 32,767 pixels a side).
/// - GLib and librsvg log messages never reach stderr (handlers for their GLib log domains drop them).
/// - Where librsvg runs is ``isolation``: in this process by default, which a hostile document
///   can crash or hang; ``Isolation/worker(_:)`` for untrusted documents (``SVGWorker``).
public struct SVGDecoder: ImageDecoding {
    /// The size of a document that has neither an absolute `width`/`height` nor a `viewBox`:
    /// 300 × 150, the CSS default size of a replaced element (what a browser gives such an
    /// SVG in `<img>`).
    public static let defaultSize = PixelSize(width: 300, height: 150)

    /// Where librsvg runs. Default ``Isolation/inProcess``.
    public var isolation: Isolation

    /// Where ``SVGDecoder`` parses and draws documents.
    public enum Isolation: Sendable, Hashable {
        /// In this process: fastest, but librsvg 2.54 can abort the process (a panic), draw for
        /// hours without a way to stop it, and allocate past the pipeline's budget on a hostile
        /// document. For trusted documents (an app's own icons), or where no worker executable
        /// exists.
        case inProcess
        /// In a worker process per document, under ``SVGWorker``'s limits: a crash, a hang or an
        /// allocation past them fails that decode with an ``SVGWorkerError``, and a cancelled
        /// decode kills its worker. For untrusted documents (a server, a tool reading what
        /// others sent).
        case worker(SVGWorker)
    }

    /// Creates the decoder, drawing in this process unless `isolation` says otherwise.
    public init(isolation: Isolation = .inProcess) {
        self.isolation = isolation
    }

    /// A pre-check on the first bytes (gzip, or XML not yet seen to have another root); the
    /// decision is ``canDecode(_:)``'s, which reads as far as the root element.
    public var signatures: [ImageSignature] {
        [ImageSignature(format: .svg) { SVGRootSniffer.mayBeSVG($0) }]
    }

    /// `true` when the root element is `svg` (inflating at most 256 KiB of a gzip stream to see it).
    public func canDecode(_ data: Data) -> Bool {
        SVGRootSniffer.isSVG(data)
    }

    /// Parses the whole document (librsvg has no header-only mode), in this process or a worker
    /// (``isolation``), and runs `body`; the handle, or the worker, is freed when this returns.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try SVGDocument.loadLibrary()  // before the root check, which inflates SVGZ with GIO
        guard SVGRootSniffer.isSVG(data) else {
            throw ImagePipelineError.corruptData(format: .svg, message: "the root element is not <svg>")
        }
        switch isolation {
        case .inProcess: return try body(Session(document: .local(try SVGDocument(data, defaultSize: Self.defaultSize)), data: data))
        case .worker(let worker): return try body(Session(document: .worker(try SVGWorkerProcess(worker, data: data)), data: data))
        }
    }

    /// One parsed document.
    struct Session: ImageDecodingSession {
        let document: Parsed
        /// The document's bytes, for the check of the pictures it embeds.
        let data: Data

        /// A document parsed here, or by a worker that holds it.
        enum Parsed {
            case local(SVGDocument)
            case worker(SVGWorkerProcess)

            var naturalSize: PixelSize {
                switch self {
                case .local(let document): return document.naturalSize
                case .worker(let process): return process.naturalSize
                }
            }
        }

        var info: ImageInfo {
            var info = ImageInfo(format: .svg, size: document.naturalSize, hasAlpha: true, componentCount: 4, bitDepth: 8)
            info.isVector = true
            return info
        }

        /// Draws at `options.targetSize` (the natural size when `nil`), premultiplied or
        /// straight as asked.
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let size = options.targetSize ?? document.naturalSize
            try options.checkPixelLimit(ImageInfo(format: .svg, size: size))
            // librsvg decodes an embedded picture whole, whatever size it is drawn at.
            if let nested = SVGNestedImages.largest(in: data), nested.pixelCount > options.maxPixelCount {
                throw ImagePipelineError.tooManyPixels(nested, limit: options.maxPixelCount)
            }
            let bitmap: Bitmap
            switch document {
            case .local(let document): bitmap = try document.render(size, pixelFormat: options.pixelFormat)
            case .worker(let process):
                bitmap = try process.render(size, pixelFormat: options.pixelFormat, memory: estimatedPeakMemory(options))
            }
            return DecodedImage(bitmap: bitmap, info: info)
        }

        /// cairo's surface and the bitmap made from it, and as much again for librsvg's
        /// intermediate surfaces (groups with opacity, masks, filters).
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int {
            let pixels = (options.targetSize ?? document.naturalSize).pixelCount
            return pixels > Int.max / 16 ? Int.max : pixels * 12
        }
    }
}
