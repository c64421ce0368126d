import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The work limit on scans (issue 21, finding 2): a progressive file whose scans would walk the
/// picture's blocks more than `maxScanPasses` times over is refused from the marker walk, before
/// libjpeg decodes a scan, on the header path too.
@Suite(.tags(.cpuBound))
struct JPEGScanLimitTests {
    /// 64×64 gray: 64 blocks, so the default budget is 16 × 64 = 1,024 blocks.
    static let blocks = 64

    @Test func aFileOneScanOverTheBudgetIsRefusedBeforeDecoding() throws {
        let data = ScanBombWriter.jpeg(width: 64, height: 64, scans: 17)
        let expected = ImagePipelineError.overLimit(.decodeWork, limit: 16 * Self.blocks, actual: 17 * Self.blocks)
        #expect(throws: expected) { _ = try JPEGDecoder().decode(data, options: DecodeOptions()) }
        #expect(throws: expected) { _ = try JPEGDecoder().readInfo(data) }
    }

    @Test func aFileAtTheBudgetDecodes() throws {
        let data = ScanBombWriter.jpeg(width: 64, height: 64, scans: 16)
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        #expect(decoded.bitmap.size == PixelSize(width: 64, height: 64))
        #expect(decoded.info.isProgressive)
    }

    /// The budget is counted at full size: a thumbnail of the file is refused just the same.
    @Test func theBudgetIgnoresTheDCTScale() throws {
        let data = ScanBombWriter.jpeg(width: 64, height: 64, scans: 40)
        #expect(throws: ImagePipelineError.overLimit(.decodeWork, limit: 16 * Self.blocks, actual: 40 * Self.blocks)) {
            _ = try JPEGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 8, height: 8)))
        }
    }

    @Test func moreScansThanTheCeilingAreRefused() throws {
        let data = ScanBombWriter.jpeg(width: 8, height: 8, scans: 12)
        #expect(throws: ImagePipelineError.overLimit(.scans, limit: 10, actual: 12)) {
            _ = try JPEGDecoder(maxScans: 10).readInfo(data)
        }
        // Under a raised ceiling (and the default budget: 12 passes of 1 block) it decodes.
        #expect(try JPEGDecoder(maxScans: 12).decode(data, options: DecodeOptions()).bitmap.size == PixelSize(width: 8, height: 8))
    }

    /// libjpeg's own progressive script on 4:2:0 colour: the interleaved DC scans walk whole
    /// MCUs (4 × 4 MCUs of 6 blocks), each AC scan one component's blocks (Y 64, Cb and Cr 16):
    /// 96 + 64 + 16 + 16 + 64 + 64 + 96 + 16 + 16 + 64 = 512 blocks, 5.3 passes over the 96.
    @Test func aLibjpegProgressiveFileIsCountedScanByScan() throws {
        let data = try #require(Fixtures.jpeg(width: 64, height: 64, progressive: true))
        #expect(throws: ImagePipelineError.overLimit(.decodeWork, limit: 5 * 96, actual: 512)) {
            _ = try JPEGDecoder(maxScanPasses: 5).readInfo(data)
        }
        #expect(try JPEGDecoder(maxScanPasses: 6).readInfo(data).isProgressive)
        #expect(try JPEGDecoder().decode(data, options: DecodeOptions()).bitmap.size == PixelSize(width: 64, height: 64))
    }
}
