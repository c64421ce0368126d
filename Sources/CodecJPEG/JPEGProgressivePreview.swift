import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Previews of a progressive JPEG still arriving: its complete scans, closed with an EOI.
///
/// libjpeg decodes scans 1…N followed by an EOI exactly as its buffered-image mode shows the
/// output pass after scan N (`jpeg_start_output(cinfo, N)`): the same coefficients, the same
/// record of which bits of them are known (so the same block smoothing), the same IDCT and
/// upsampling. So a preview is one more ordinary decode, through every limit of the final one.
extension JPEGDecoder: ProgressiveDecoding {
    /// The first `partial.count` bytes up to the end of their last complete scan (one whose
    /// entropy-coded data is followed by a marker), then `FF D9`; `ProgressivePreview.steps`
    /// is the number of complete scans.
    ///
    /// `nil` for a baseline, extended or lossless file (its rows arrive top to bottom), before the
    /// frame header and the first scan are complete, for bytes that are not a JPEG or whose
    /// scans are already over this decoder's limits, and once the EOI has arrived (the final
    /// decode shows it all).
    ///
    /// - Complexity: the marker walk every decode makes, over `partial` (linear: `memchr` over
    ///   the entropy-coded data), and one copy of the bytes kept.
    public func preview(of partial: Data) -> ProgressivePreview? {
        partial.withUnsafeBytes { bytes -> ProgressivePreview? in
            guard bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF else { return nil }
            let walk = JPEGMarkerWalk(bytes)
            // SOF2 and SOF10, progressive Huffman and arithmetic: the progressive frames libjpeg
            // decodes (SOF6 and SOF14 are hierarchical).
            guard walk.frameMarker == 0xC2 || walk.frameMarker == 0xCA, !walk.reachedEnd, walk.completeScans > 0,
                  (try? JPEGDecoder.check(walk, limits: self)) != nil
            else { return nil }
            var data = Data(capacity: walk.completeScansEnd + 2)
            data.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[..<walk.completeScansEnd]))
            data.append(contentsOf: [0xFF, 0xD9])
            return ProgressivePreview(data: data, steps: walk.completeScans)
        }
    }
}
