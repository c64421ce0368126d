import CWebP
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The libwebp calls the decoder makes, each turning a `VP8StatusCode` into a typed error.
enum WebPInput {
    /// The bytes as libwebp takes them; empty data is corrupt.
    static func bytes(_ raw: UnsafeRawBufferPointer) throws(ImagePipelineError) -> UnsafeBufferPointer<UInt8> {
        let bytes = raw.bindMemory(to: UInt8.self)
        guard bytes.baseAddress != nil, !bytes.isEmpty else { throw .corruptData(format: .webp, message: "the data is empty") }
        return bytes
    }

    /// `WebPGetFeatures`: size, alpha, animation, from the headers alone.
    static func features(_ bytes: UnsafeBufferPointer<UInt8>) throws(ImagePipelineError) -> WebPBitstreamFeatures {
        var features = WebPBitstreamFeatures()
        try check(WebPGetFeatures(bytes.baseAddress, bytes.count, &features), "reading the header")
        return features
    }

    /// The header as an ``PipelineCore/ImageInfo``; an animation's frames are counted by `WebPDemux`.
    static func info(_ bytes: UnsafeBufferPointer<UInt8>, features: WebPBitstreamFeatures) throws(ImagePipelineError) -> ImageInfo {
        var frames = 1
        if features.has_animation != 0 {
            frames = try Demuxer(bytes).frameCount
        }
        return ImageInfo(format: .webp, size: PixelSize(width: Int(features.width), height: Int(features.height)),
                         hasAlpha: features.has_alpha != 0, frameCount: frames,
                         componentCount: features.has_alpha != 0 ? 4 : 3, bitDepth: 8)
    }

    /// The ICC profile of an extended (`VP8X`) file whose header flags one (the only kind
    /// that can hold an `ICCP` chunk); `nil` for simple files, without parsing them further.
    static func iccProfile(_ bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        let iccFlag: UInt8 = 0x20
        guard bytes.count >= 30, Array(bytes[12..<16]) == Array("VP8X".utf8), bytes[20] & iccFlag != 0 else { return nil }
        return (try? Demuxer(bytes))?.iccProfile
    }

    /// Decodes a still bitstream (or an animation frame's fragment) straight into `bitmap` at
    /// `origin`, `size` pixels large, as `MODE_rgbA` or, for a bitmap labelled
    /// ``PipelineCore/PixelFormat/rgba8Straight``, `MODE_RGBA`; with `scaled`, libwebp scales to
    /// `size` as it decodes.
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, into bitmap: inout Bitmap, at origin: (x: Int, y: Int),
                       size: PixelSize, scaled: Bool) throws(ImagePipelineError) {
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else {
            throw .corruptData(format: .webp, message: "libwebp's decoder ABI does not match its headers")
        }
        config.output.colorspace = bitmap.pixelFormat.isPremultiplied ? MODE_rgbA : MODE_RGBA
        config.output.is_external_memory = 1
        // Lossy: in-loop filtering and output run on a second thread (as libvips and `dwebp -mt`
        // decode); no effect on lossless bitstreams.
        config.options.use_threads = 1
        if scaled {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(size.width)
            config.options.scaled_height = Int32(size.height)
        }
        let stride = bitmap.bytesPerRow
        let start = origin.y * stride + origin.x * 4
        let length = stride * (size.height - 1) + size.width * 4
        precondition(start >= 0 && start + length <= bitmap.cost, "frame region outside the bitmap")
        let status = bitmap.withUnsafeMutableBytes { pixels -> VP8StatusCode in
            guard let base = pixels.baseAddress else { return VP8_STATUS_INVALID_PARAM }
            config.output.u.RGBA.rgba = base + start
            config.output.u.RGBA.stride = Int32(stride)
            config.output.u.RGBA.size = length
            defer { WebPFreeDecBuffer(&config.output) }  // frees nothing with external memory; kept for every path
            return WebPDecode(bytes.baseAddress, bytes.count, &config)
        }
        try check(status, "decoding")
    }

    /// A `WebPDemuxer` over borrowed bytes, deleted when it goes away. `~Copyable`: one owner.
    struct Demuxer: ~Copyable {
        private let pointer: OpaquePointer

        /// Parses the whole RIFF container; `bytes` must outlive the demuxer.
        init(_ bytes: UnsafeBufferPointer<UInt8>) throws(ImagePipelineError) {
            var data = WebPData(bytes: bytes.baseAddress, size: bytes.count)
            guard let pointer = WebPDemux(&data) else {
                throw .corruptData(format: .webp, message: "the animation's RIFF container is invalid or incomplete")
            }
            self.pointer = pointer
        }

        deinit { WebPDemuxDelete(pointer) }

        /// The `ICCP` chunk's payload, if the container has one.
        var iccProfile: Data? {
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(pointer, "ICCP", 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let base = iterator.chunk.bytes, iterator.chunk.size > 0 else { return nil }
            return Data(bytes: base, count: iterator.chunk.size)
        }

        /// `WEBP_FF_FRAME_COUNT`.
        var frameCount: Int { Int(WebPDemuxGetI(pointer, WEBP_FF_FRAME_COUNT)) }

        /// Frame 1's placement and bitstream. The fragment points into the input bytes, not
        /// into the demuxer, so it stays valid as long as they do.
        func firstFrame() throws(ImagePipelineError) -> (x: Int, y: Int, size: PixelSize, fragment: UnsafeBufferPointer<UInt8>) {
            var iterator = WebPIterator()
            guard WebPDemuxGetFrame(pointer, 1, &iterator) != 0 else {
                throw .corruptData(format: .webp, message: "the animation has no first frame")
            }
            defer { WebPDemuxReleaseIterator(&iterator) }
            guard iterator.complete != 0, let base = iterator.fragment.bytes else {
                throw .corruptData(format: .webp, message: "the animation's first frame is incomplete")
            }
            return (Int(iterator.x_offset), Int(iterator.y_offset), PixelSize(width: Int(iterator.width), height: Int(iterator.height)),
                    UnsafeBufferPointer(start: base, count: iterator.fragment.size))
        }
    }

    /// Throws ``PipelineCore/ImagePipelineError/corruptData(format:message:)`` naming the status
    /// code, or ``PipelineCore/ImagePipelineError/truncatedData(format:message:)`` when the data
    /// ends early (libwebp's one-shot decode returns no partial picture).
    static func check(_ status: VP8StatusCode, _ step: String) throws(ImagePipelineError) {
        guard status != VP8_STATUS_OK else { return }
        let message = "libwebp failed \(step): \(name(status))"
        if status == VP8_STATUS_NOT_ENOUGH_DATA { throw .truncatedData(format: .webp, message: message) }
        throw .corruptData(format: .webp, message: message)
    }

    /// The `VP8StatusCode` constant's name.
    static func name(_ status: VP8StatusCode) -> String {
        switch status {
        case VP8_STATUS_OK: return "VP8_STATUS_OK"
        case VP8_STATUS_OUT_OF_MEMORY: return "VP8_STATUS_OUT_OF_MEMORY"
        case VP8_STATUS_INVALID_PARAM: return "VP8_STATUS_INVALID_PARAM"
        case VP8_STATUS_BITSTREAM_ERROR: return "VP8_STATUS_BITSTREAM_ERROR"
        case VP8_STATUS_UNSUPPORTED_FEATURE: return "VP8_STATUS_UNSUPPORTED_FEATURE"
        case VP8_STATUS_SUSPENDED: return "VP8_STATUS_SUSPENDED"
        case VP8_STATUS_USER_ABORT: return "VP8_STATUS_USER_ABORT"
        case VP8_STATUS_NOT_ENOUGH_DATA: return "VP8_STATUS_NOT_ENOUGH_DATA"
        default: return "VP8StatusCode \(status.rawValue)"
        }
    }
}
