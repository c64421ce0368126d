#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ``ImageProcessor/overlay(_:id:gravity:offset:opacity:relativeSize:)``: a watermark or badge
/// composited over the picture ("source over").
struct OverlayProcessor: ImageProcessing {
    let picture: Bitmap
    let id: String
    let gravity: CropAnchor
    let offset: (x: Int, y: Int)
    let opacity: Double
    let relativeSize: Double?

    var identifier: String {
        "overlay(\(id),\(gravity),\(offset.x),\(offset.y),\(opacity)" + (relativeSize.map { ",\($0)" } ?? "") + ")"
    }

    var acceptsStraightAlpha: Bool { true }

    func process(_ bitmap: Bitmap) throws -> Bitmap {
        guard opacity.isFinite, (0...1).contains(opacity) else {
            throw ImageProcessingError.invalidParameter("overlay opacity \(opacity) (0...1)")
        }
        let top = try scaled(to: bitmap.size)
        let (fx, fy) = gravity.point ?? (0.5, 0.5)
        // Centred on the gravity's point as closely as the edges allow, then moved `offset`
        // towards the centre from the edge it is anchored to (right and down from the centre).
        // An inset past the base and the overlay together puts it off the base either way, so
        // it is clamped there: no offset, `Int.min` included, can overflow.
        func place(_ f: Double, base: Int, size: Int, inset: Int) -> Int {
            let at = Int((f * Double(base - size)).rounded())
            let inset = min(base + size, max(-(base + size), inset))
            return f > 0.5 ? at - inset : at + inset
        }
        let x0 = place(fx, base: bitmap.width, size: top.width, inset: offset.x)
        let y0 = place(fy, base: bitmap.height, size: top.height, inset: offset.y)
        let xs = span(from: x0, length: top.width, within: bitmap.width)
        let ys = span(from: y0, length: top.height, within: bitmap.height)
        guard !xs.isEmpty, !ys.isEmpty, opacity > 0 else { return bitmap }
        let format = bitmap.pixelFormat
        var out = try makeBitmap(width: bitmap.width, height: bitmap.height, pixelFormat: format, bytes: bitmap.unpaddedBytes())
        top.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                let base = UnsafeBufferPointer(dst)
                for y in ys {
                    for x in xs {
                        let s = (y - y0) * top.bytesPerRow + (x - x0) * 4, d = (y * bitmap.width + x) * 4
                        guard src[s + 3] > 0 else { continue }
                        let over = SourceOver.Premultiplied(src, s, top.pixelFormat, opacity: opacity)
                        over.over(SourceOver.Premultiplied(base, d, format)).write(dst, d, format)
                    }
                }
            }
        }
        return out
    }

    /// The picture as it is composited on a base of `size`: as given, or fitted inside
    /// ``relativeSize`` of the base's width and height (premultiplied by the resampler then).
    private func scaled(to size: PixelSize) throws -> Bitmap {
        guard let relativeSize else { return picture }
        guard relativeSize.isFinite, relativeSize > 0 else {
            throw ImageProcessingError.invalidParameter("overlay relative size \(relativeSize) (above 0)")
        }
        let box = Self.drawBox(relativeSize: relativeSize, base: size) ?? size
        let plan = ResizePlan(source: picture.size, target: .pixels(box), contentMode: .fit, allowsUpscaling: true)
        return plan.outputSize == picture.size ? picture : Resampler.resample(picture.premultiplied(), plan: plan)
    }
}

extension ImagePipeline {
    /// An overlay processor for the picture at `url`, loaded through this pipeline (its
    /// caches, loaders and limits) with straight alpha, so its stored colours are composited
    /// exactly. The parameters are those of
    /// ``ImageProcessing/overlay(_:id:gravity:offset:opacity:relativeSize:)``; the picture is
    /// named in cache keys by a hash of its pixels, so a changed watermark behind the same URL
    /// never answers from results made with the old one.
    ///
    /// With `relativeSize` and `base` (the largest picture it will be drawn on, e.g. the
    /// requests' target box), the picture is decoded at the size it is drawn at, fitted inside
    /// `relativeSize` of `base` (shrink-on-load, as a request for that size is), never at its
    /// own: a 10000×10000 watermark on a 64-px thumbnail costs a 16-px decode. Drawn on a
    /// smaller picture, it is resampled from that size. Without either, it is loaded at its own
    /// size (drawn 1:1, every pixel of it may show).
    /// - Throws: what ``image(for:)`` throws for `url`.
    public nonisolated func overlay(_ url: URL, gravity: CropAnchor = .bottomRight, offset: (x: Int, y: Int) = (0, 0),
                                    opacity: Double = 1, relativeSize: Double? = nil,
                                    drawnWithin base: PixelSize? = nil) async throws -> ImageProcessor {
        var request = ImageRequest(url: url)
        if let box = OverlayProcessor.drawBox(relativeSize: relativeSize, base: base) {
            request = ImageRequest(url: url, width: box.width, height: box.height)
        }
        request.processing.pixelFormat = .rgba8Straight
        let picture = try await image(for: request).bitmap
        return .overlay(picture, gravity: gravity, offset: offset, opacity: opacity, relativeSize: relativeSize)
    }
}

extension OverlayProcessor {
    /// The box the picture is fitted inside on a base of `base`: ``relativeSize`` of its width
    /// and height, rounded as ``process(_:)`` rounds them; `nil` without both, or for a size
    /// ``process(_:)`` refuses.
    static func drawBox(relativeSize: Double?, base: PixelSize?) -> PixelSize? {
        guard let relativeSize, relativeSize.isFinite, relativeSize > 0, let base, base.isValid else { return nil }
        func side(_ length: Int) -> Int { max(1, Int(min(Double(1 << 24), (Double(length) * relativeSize).rounded()))) }
        return PixelSize(width: side(base.width), height: side(base.height))
    }
}
