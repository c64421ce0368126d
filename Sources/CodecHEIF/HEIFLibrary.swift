import CHEIF
import LazyLibraries
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The libheif objects the decoder uses, each freed by its owner's `deinit` on every path, and
/// `heif_error` turned into typed errors. `~Copyable`: one owner each.
enum HEIFLibrary {
    /// `heif_init` once per process (it registers the built-in decoder plugins; doing it
    /// up front avoids libheif's lazy registration racing between decode threads), then our
    /// dav1d plugin (``Dav1dPlugin``), which keeps dav1d's log lines off stderr, and our libde265
    /// plugin (``De265Plugin``), which decodes HEVC on two worker threads.
    static var initialized: Bool { setUp.initialized }

    /// Opens libheif on first use (`LazyLibrary`): a decoder's error when it is missing.
    static func load(_ format: ImageFormat) throws(ImagePipelineError) {
        do { try LazyLibrary.heif.load() } catch { throw .libraryUnavailable(error) }
    }

    /// Whether ``Dav1dPlugin`` is registered (libheif refuses a plugin API newer than its own).
    static var dav1dPluginRegistered: Bool { setUp.dav1dPlugin }

    private static let setUp: (initialized: Bool, dav1dPlugin: Bool) = {
        guard heif_init(nil).code == heif_error_Ok else { return (false, false) }
        // Refused (a libheif whose plugin API is older), libheif's own libde265 plugin decodes HEVC.
        _ = De265Plugin.register()
        return (true, Dav1dPlugin.register())
    }()

    /// Whether libheif has an AV1 decoder (libaom or dav1d) compiled in.
    static let decodesAV1: Bool = initialized && heif_have_decoder_for_format(heif_compression_AV1) != 0

    /// `.unsupported` for libheif's "unsupported" codes, `.truncatedData` when the data ends
    /// early (`heif_suberror_End_of_data`), `.corruptData` with libheif's own message for
    /// everything else.
    static func check(_ error: heif_error, _ format: ImageFormat, _ step: String) throws(ImagePipelineError) {
        guard error.code != heif_error_Ok else { return }
        let message = "libheif failed \(step): " + (error.message.map { text($0) } ?? "error \(error.code.rawValue)")
        if error.code == heif_error_Unsupported_feature || error.code == heif_error_Unsupported_filetype {
            throw .unsupported(format: format, message: message)
        }
        if error.subcode == heif_suberror_End_of_data { throw .truncatedData(format: format, message: message) }
        throw .corruptData(format: format, message: message)
    }

    /// A C library's message as one line: trailing newlines and spaces trimmed (libheif ends
    /// some messages with "\n"), inner line breaks turned into spaces, the rest escaped and
    /// bounded (`MessageText`): libheif's messages quote box types and names from the file.
    static func text(_ message: UnsafePointer<CChar>) -> String {
        MessageText.escaped(String(cString: message).split(whereSeparator: \.isNewline)
            .map { $0.trimmingSpacesAndTabs() }.filter { !$0.isEmpty }.joined(separator: " "))
    }

    /// A `heif_context` that has read the file. It borrows the bytes (`…without_copy`): they
    /// must outlive it, so it is only ever used inside `Data.withUnsafeBytes`.
    struct Context: ~Copyable {
        let pointer: OpaquePointer
        let format: ImageFormat

        init(_ bytes: UnsafeRawBufferPointer, format: ImageFormat) throws(ImagePipelineError) {
            try load(format)
            guard initialized else { throw .unsupported(format: format, message: "libheif failed to initialise") }
            guard let base = bytes.baseAddress, !bytes.isEmpty else { throw .corruptData(format: format, message: "the data is empty") }
            if format == .avif, !decodesAV1 {
                throw .unsupported(format: .avif, message: "libheif \(String(cString: heif_get_version())) has no AV1 decoder")
            }
            guard let pointer = heif_context_alloc() else { throw .corruptData(format: format, message: "heif_context_alloc failed") }
            let error = heif_context_read_from_memory_without_copy(pointer, base, bytes.count, nil)
            if error.code != heif_error_Ok {
                defer { heif_context_free(pointer) }  // after `check` has copied the message, which the context owns
                try check(error, format, "reading the file")
            }
            self.pointer = pointer
            self.format = format
        }

        deinit { heif_context_free(pointer) }

        /// `heif_context_get_number_of_top_level_images`.
        var topLevelImageCount: Int { Int(heif_context_get_number_of_top_level_images(pointer)) }

        /// The primary image.
        func primary() throws(ImagePipelineError) -> Handle {
            var handle: OpaquePointer?
            try check(heif_context_get_primary_image_handle(pointer, &handle), format, "finding the primary image")
            guard let handle else { throw .corruptData(format: format, message: "the file has no primary image") }
            return Handle(handle, format: format)
        }
    }

    /// A `heif_image_handle`: an image item (primary or thumbnail) before decoding.
    struct Handle: ~Copyable {
        let pointer: OpaquePointer
        let format: ImageFormat

        init(_ pointer: OpaquePointer, format: ImageFormat) {
            self.pointer = pointer
            self.format = format
        }

        deinit { heif_image_handle_release(pointer) }

        /// The displayed size: libheif's width and height, with rotation and cropping applied.
        var size: PixelSize {
            PixelSize(width: Int(heif_image_handle_get_width(pointer)), height: Int(heif_image_handle_get_height(pointer)))
        }

        var hasAlpha: Bool { heif_image_handle_has_alpha_channel(pointer) != 0 }

        /// The ICC profile of the item's `colr` box (`prof` or `rICC`), if it has one. An
        /// `nclx` box (coded primaries and transfer, no ICC) is not read.
        var iccProfile: Data? {
            let type = heif_image_handle_get_color_profile_type(pointer)
            guard type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC else { return nil }
            let size = heif_image_handle_get_raw_color_profile_size(pointer)
            guard size > 0, size <= 16 << 20 else { return nil }
            var bytes = Data(count: size)
            let error = bytes.withUnsafeMutableBytes { heif_image_handle_get_raw_color_profile(pointer, $0.baseAddress) }
            return error.code == heif_error_Ok ? bytes : nil
        }

        /// The `nclx` box's colour primaries and transfer characteristics (H.273 codes), if any.
        var codedColor: (primaries: Int, transfer: Int)? {
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>? = nil
            guard heif_image_handle_get_nclx_color_profile(pointer, &nclx).code == heif_error_Ok, let nclx else { return nil }
            defer { heif_nclx_color_profile_free(nclx) }
            return (Int(nclx.pointee.color_primaries.rawValue), Int(nclx.pointee.transfer_characteristics.rawValue))
        }

        var isPremultiplied: Bool { heif_image_handle_is_premultiplied_alpha(pointer) != 0 }
        var bitDepth: Int? {
            let bits = Int(heif_image_handle_get_luma_bits_per_pixel(pointer))
            return bits > 0 ? bits : nil
        }

        /// The thumbnails' item IDs (`heif_image_handle_get_list_of_thumbnail_IDs`).
        var thumbnailIDs: [heif_item_id] {
            let count = Int(heif_image_handle_get_number_of_thumbnails(pointer))
            guard count > 0 else { return [] }
            var ids = [heif_item_id](repeating: 0, count: count)
            let filled = Int(heif_image_handle_get_list_of_thumbnail_IDs(pointer, &ids, Int32(count)))
            return Array(ids.prefix(max(0, min(filled, count))))
        }

        func thumbnail(_ id: heif_item_id) throws(ImagePipelineError) -> Handle {
            var handle: OpaquePointer?
            try check(heif_image_handle_get_thumbnail(pointer, id, &handle), format, "opening thumbnail \(id)")
            guard let handle else { throw .corruptData(format: format, message: "thumbnail \(id) is missing") }
            return Handle(handle, format: format)
        }

        /// Decodes to 8-bit interleaved RGB (RGBA when the image has alpha) with the file's
        /// transformations applied, refusing more than `maxPixelCount` pixels, and turns it into
        /// a ``PipelineCore/Bitmap`` in `pixelFormat`: copied row by row at full size (libheif's
        /// straight values unchanged when straight is asked), or, when `output` is smaller, pushed
        /// row by row (premultiplied one row at a time) through a ``PipelineCore/RowResampler``
        /// straight from libheif's plane, so no full-size bitmap of ours exists beside libheif's,
        /// and the result converted to `pixelFormat` once. `decodedSize` is libheif's size (checked by the caller).
        /// With `quiet`, fd 2 points at `/dev/null` during `heif_decode_image` (PipelineCore's `StandardErrorSilencer`).
        func decode(strict: Bool, maxPixelCount: Int, quiet: Bool, output: PixelSize? = nil,
                    filter: ResamplingFilter = .default, pixelFormat: PixelFormat = .rgba8Premultiplied)
            throws(ImagePipelineError) -> (bitmap: Bitmap, warnings: [String], decodedSize: PixelSize) {
            guard let options = heif_decoding_options_alloc() else {
                throw .corruptData(format: format, message: "heif_decoding_options_alloc failed")
            }
            defer { heif_decoding_options_free(options) }
            options.pointee.ignore_transformations = 0
            options.pointee.convert_hdr_to_8bit = 1
            options.pointee.strict_decoding = strict ? 1 : 0
            // RGB when there is no alpha: libheif's plane is 3 bytes a pixel instead of 4.
            let alpha = hasAlpha
            let chroma = alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB
            var decoded: OpaquePointer?
            let error = quiet
                ? StandardErrorSilencer.silenced { heif_decode_image(pointer, &decoded, heif_colorspace_RGB, chroma, options) }
                : heif_decode_image(pointer, &decoded, heif_colorspace_RGB, chroma, options)
            defer { if let decoded { heif_image_release(decoded) } }
            try check(error, format, "decoding")
            guard let image = decoded else { throw .corruptData(format: format, message: "libheif returned no image") }
            let width = Int(heif_image_get_width(image, heif_channel_interleaved))
            let height = Int(heif_image_get_height(image, heif_channel_interleaved))
            let channels = alpha ? 4 : 3
            var stride: Int32 = 0
            guard width > 0, height > 0, heif_image_get_bits_per_pixel(image, heif_channel_interleaved) == Int32(channels * 8),
                  let plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride),
                  Int(stride) >= width * channels else {
                throw .unsupported(format: format, message: "libheif did not produce an 8-bit \(alpha ? "RGBA" : "RGB") plane")
            }
            let size = PixelSize(width: width, height: height)
            guard size.pixelCount <= maxPixelCount else { throw .tooManyPixels(size, limit: maxPixelCount) }
            // The plane's colour is straight unless the file says it is premultiplied.
            let stored: PixelFormat = alpha && isPremultiplied ? .rgba8Premultiplied : .rgba8Straight
            let bitmap: Bitmap
            if let output, output.isValid, output.width <= width, output.height <= height, output != size {
                let rows = PlaneRows(plane: plane, stride: Int(stride), size: size, channels: channels,
                                     premultiply: alpha && stored == .rgba8Straight)
                bitmap = rows.resampled(to: output, filter: filter).converted(to: pixelFormat)
            } else if !alpha || stored == pixelFormat {
                // The plane's own values are what is asked: copied unchanged.
                let rows = PlaneRows(plane: plane, stride: Int(stride), size: size, channels: channels, premultiply: false)
                bitmap = rows.bitmap(format: pixelFormat)
            } else {
                let rows = PlaneRows(plane: plane, stride: Int(stride), size: size, channels: channels,
                                     premultiply: stored == .rgba8Straight)
                bitmap = rows.bitmap(format: .rgba8Premultiplied).converted(to: pixelFormat)
            }
            return (bitmap, Self.warnings(image), size)
        }

        /// `heif_image_get_decoding_warnings`, as messages.
        private static func warnings(_ image: OpaquePointer) -> [String] {
            let count = Int(heif_image_get_decoding_warnings(image, 0, nil, 0))
            guard count > 0 else { return [] }
            var errors = [heif_error](repeating: heif_error(), count: count)
            let filled = Int(heif_image_get_decoding_warnings(image, 0, &errors, Int32(count)))
            return errors.prefix(max(0, min(filled, count))).map { $0.message.map { text($0) } ?? "warning \($0.code.rawValue)" }
        }
    }
}
