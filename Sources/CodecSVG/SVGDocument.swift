import CRSVG
import LazyLibraries
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One parsed SVG document: a librsvg handle loaded from memory with no base file or URL, so
/// librsvg resolves no reference outside the document (`<image href>`, `<use>` of another
/// file, CSS `@import`, XInclude) and loads only `data:` URLs; external XML entities are never
/// loaded, and libxml2's limits (entity amplification, element depth 256) stay on
/// (`RSVG_HANDLE_FLAG_UNLIMITED` is never passed).
///
/// The handle is freed when the document is.
final class SVGDocument {
    /// The natural size in CSS pixels (96 per inch), fractional as the document gives it.
    let naturalWidth: Double
    let naturalHeight: Double
    /// Where the natural size came from.
    let sizeSource: SizeSource
    private let handle: OpaquePointer

    /// How ``naturalWidth`` and ``naturalHeight`` were found.
    enum SizeSource: Equatable {
        /// The root's `width` and `height` (in any absolute unit).
        case intrinsic
        /// No absolute `width`/`height` (absent or percentages): the `viewBox` size in pixels.
        case viewBox
        /// Neither: ``SVGDecoder/defaultSize``.
        case defaultSize
    }

    /// CSS pixels per inch, as browsers and `rsvg-convert` use (librsvg's own default is 90).
    static let dpi = 96.0

    /// The largest side a natural size is given as (2³⁰ px): past it the pixel limit refuses
    /// the picture anyway, and the size stays representable.
    static let largestSide = Double(1 << 30)

    /// Opens librsvg (with cairo, GLib and GIO) on first use (`LazyLibrary`): a decoder's error
    /// when it is missing.
    static func loadLibrary() throws(ImagePipelineError) {
        do { try LazyLibrary.rsvg.load() } catch { throw .libraryUnavailable(error) }
    }

    /// Parses `data` (SVG or gzip-compressed SVGZ: librsvg inflates it itself).
    init(_ data: Data, defaultSize: PixelSize) throws {
        try Self.loadLibrary()
        GLibLogSilencer.install()
        var error: UnsafeMutablePointer<GError>?
        let loaded: OpaquePointer? = data.withUnsafeBytes { raw in
            guard let base = raw.baseAddress,
                  let stream = g_memory_input_stream_new_from_data(base, gssize(raw.count), nil) else { return nil }
            // The stream does not copy `data`; it is read to its end before this returns.
            defer { g_object_unref(UnsafeMutableRawPointer(stream)) }
            return rsvg_handle_new_from_stream_sync(stream, nil, RSVG_HANDLE_FLAGS_NONE, nil, &error)
        }
        guard let loaded else {
            throw ImagePipelineError.corruptData(format: .svg, message: Self.take(error) ?? "no data")
        }
        if let error { g_error_free(error) }
        handle = loaded
        rsvg_handle_set_dpi(handle, Self.dpi)

        var width = 0.0, height = 0.0
        if rsvg_handle_get_intrinsic_size_in_pixels(handle, &width, &height) != 0 {
            sizeSource = .intrinsic
        } else {
            var hasWidth: gboolean = 0, hasHeight: gboolean = 0, hasViewBox: gboolean = 0
            var lengthW = RsvgLength(), lengthH = RsvgLength(), viewBox = RsvgRectangle()
            rsvg_handle_get_intrinsic_dimensions(handle, &hasWidth, &lengthW, &hasHeight, &lengthH, &hasViewBox, &viewBox)
            if hasViewBox != 0, viewBox.width > 0, viewBox.height > 0 {
                (width, height) = (viewBox.width, viewBox.height)
                sizeSource = .viewBox
            } else {
                (width, height) = (Double(defaultSize.width), Double(defaultSize.height))
                sizeSource = .defaultSize
            }
        }
        guard width.isFinite, height.isFinite, width > 0, height > 0 else {
            g_object_unref(UnsafeMutableRawPointer(handle))
            throw ImagePipelineError.corruptData(format: .svg, message: "the document's size is \(width)×\(height) px")
        }
        naturalWidth = min(width, Self.largestSide)
        naturalHeight = min(height, Self.largestSide)
    }

    deinit { g_object_unref(UnsafeMutableRawPointer(handle)) }

    /// The natural size in whole pixels, each side rounded up (as `rsvg-convert` sizes its canvas).
    var naturalSize: PixelSize {
        PixelSize(width: Int(naturalWidth.rounded(.up)), height: Int(naturalHeight.rounded(.up)))
    }

    /// cairo's image surfaces are at most 32767 pixels a side.
    static let largestCanvasSide = 32_767

    /// Draws the document on a transparent `size` canvas, uniformly scaled from the top left
    /// (``scale(for:)``); the document's own `viewBox` and `preserveAspectRatio` place the
    /// drawing inside its natural viewport.
    ///
    /// The caller has checked the pixel limit; `size` is checked against cairo's limit here,
    /// before the surface is allocated.
    func render(_ size: PixelSize, pixelFormat: PixelFormat) throws -> Bitmap {
        guard size.isValid else { throw ImagePipelineError.corruptData(format: .svg, message: "a canvas of \(size) px") }
        guard size.width <= Self.largestCanvasSide, size.height <= Self.largestCanvasSide else {
            throw ImagePipelineError.unsupported(format: .svg, message: "a \(size) px canvas: cairo draws at most "
                                                 + "\(Self.largestCanvasSide) pixels a side")
        }
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(size.width), Int32(size.height)) else {
            throw ImagePipelineError.unsupported(format: .svg, message: "cairo could not make a \(size) px surface")
        }
        defer { cairo_surface_destroy(surface) }
        guard cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS else {
            throw ImagePipelineError.unsupported(format: .svg, message: "cairo could not make a \(size) px surface: "
                                                 + String(cString: cairo_status_to_string(cairo_surface_status(surface))))
        }
        guard let context = cairo_create(surface) else {
            throw ImagePipelineError.unsupported(format: .svg, message: "cairo could not make a drawing context")
        }
        defer { cairo_destroy(context) }
        let scale = scale(for: size)
        cairo_scale(context, naturalWidth * scale / naturalWidth, naturalHeight * scale / naturalHeight)
        var viewport = RsvgRectangle(x: 0, y: 0, width: naturalWidth, height: naturalHeight)
        var error: UnsafeMutablePointer<GError>?
        guard rsvg_handle_render_document(handle, context, &viewport, &error) != 0 else {
            throw ImagePipelineError.corruptData(format: .svg, message: Self.take(error) ?? "librsvg could not draw it")
        }
        if let error { g_error_free(error) }
        cairo_surface_flush(surface)
        guard let pixels = cairo_image_surface_get_data(surface) else {
            throw ImagePipelineError.unsupported(format: .svg, message: "cairo gave no pixels")
        }
        return Self.bitmap(fromARGB32: pixels, stride: Int(cairo_image_surface_get_stride(surface)), size: size,
                           pixelFormat: pixelFormat)
    }

    /// The uniform scale for a `size` canvas: the larger factor that fits the drawing inside,
    /// `min(width / naturalWidth, height / naturalHeight)`, as `rsvg-convert -w W -h H -a` does
    /// (its canvas has the fitted sides rounded up, so the last row or column may be partly
    /// covered). When that leaves more than half a pixel uncovered on the other side (a canvas
    /// whose side was rounded down, as the pipeline's fitted sizes may be), the other factor, if
    /// the drawing then overflows that side by less than half a pixel: the canvas is covered
    /// edge to edge, the overflow clipped.
    func scale(for size: PixelSize) -> Double {
        let byWidth = Double(size.width) / naturalWidth, byHeight = Double(size.height) / naturalHeight
        let fitting = min(byWidth, byHeight), other = max(byWidth, byHeight)
        func covers(_ scale: Double) -> Bool {
            (naturalWidth * scale).rounded() == Double(size.width) && (naturalHeight * scale).rounded() == Double(size.height)
        }
        return !covers(fitting) && covers(other) ? other : fitting
    }

    /// cairo's `ARGB32` (premultiplied, each pixel a native-endian 32-bit `A R G B` word) as
    /// RGBA8 in `pixelFormat`: premultiplied as it is, or straight with alpha divided out as
    /// cairo's own PNG writer does (`c × 255 + a / 2) / a`, ``Bitmap/unpremultiply(_:into:)``).
    static func bitmap(fromARGB32 pixels: UnsafeMutablePointer<UInt8>, stride: Int, size: PixelSize,
                       pixelFormat: PixelFormat) -> Bitmap {
        var bitmap = Bitmap(zeroed: size, pixelFormat: pixelFormat)
        let rowBytes = size.width * 4
        bitmap.withUnsafeMutableBytes { out in
            for y in 0..<size.height {
                let source = UnsafeRawPointer(pixels + y * stride)
                let row = UnsafeMutableBufferPointer(rebasing: out[(y * rowBytes)..<((y + 1) * rowBytes)])
                for x in 0..<size.width {
                    let word = source.loadUnaligned(fromByteOffset: x * 4, as: UInt32.self)
                    row[x * 4] = UInt8(truncatingIfNeeded: word >> 16)
                    row[x * 4 + 1] = UInt8(truncatingIfNeeded: word >> 8)
                    row[x * 4 + 2] = UInt8(truncatingIfNeeded: word)
                    row[x * 4 + 3] = UInt8(truncatingIfNeeded: word >> 24)
                }
                if pixelFormat == .rgba8Straight {
                    Bitmap.unpremultiply(UnsafeBufferPointer(row), into: row)
                }
            }
        }
        return bitmap
    }

    /// The message of `error`, which is freed.
    private static func take(_ error: UnsafeMutablePointer<GError>?) -> String? {
        guard let error else { return nil }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0).trimmingWhitespace() }
    }
}
