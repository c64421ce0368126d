import CodecSVG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The natural size `info` gives, and how a canvas of another size is covered.
@Suite(.tags(.cpuBound))
struct SVGSizeTests {
    static func info(_ text: String) throws -> ImageInfo { try SVGDecoder().readInfo(Data(text.utf8)) }

    static let ns = "xmlns=\"http://www.w3.org/2000/svg\""

    @Test func theNaturalSizeComesFromWidthAndHeightThenTheViewBoxThenTheDefault() throws {
        #expect(try Self.info("<svg \(Self.ns) width=\"48\" height=\"32\"/>").size == PixelSize(width: 48, height: 32))
        #expect(try Self.info("<svg \(Self.ns) width=\"1in\" height=\"0.5in\"/>").size == PixelSize(width: 96, height: 48))
        #expect(try Self.info("<svg \(Self.ns) width=\"10.2\" height=\"3\"/>").size == PixelSize(width: 11, height: 3))
        #expect(try Self.info("<svg \(Self.ns) viewBox=\"0 0 80 50\"/>").size == PixelSize(width: 80, height: 50))
        #expect(try Self.info("<svg \(Self.ns) width=\"100%\" height=\"100%\" viewBox=\"5 5 40 20\"/>").size
                == PixelSize(width: 40, height: 20))
        #expect(try Self.info("<svg \(Self.ns)><rect width=\"10\" height=\"10\"/></svg>").size == SVGDecoder.defaultSize)
        #expect(SVGDecoder.defaultSize == PixelSize(width: 300, height: 150))
    }

    @Test func anEmptySizeIsATypedError() {
        #expect(throws: ImagePipelineError.self) { _ = try Self.info("<svg \(Self.ns) width=\"0\" height=\"10\"/>") }
    }

    /// 150 × 90 fitted in 64 × 64 is 64 × 38.4: the pipeline's 64 × 38 canvas is covered edge to
    /// edge (scaled by the width, the 0.4 px below clipped), not left with a third of its last
    /// column empty; rsvg-convert's 64 × 39 canvas has its last row partly covered, as there.
    @Test func aCanvasRoundedDownIsCoveredEdgeToEdge() throws {
        let data = Data("<svg \(Self.ns) width=\"150\" height=\"90\"><rect width=\"150\" height=\"90\" fill=\"#336699\"/></svg>".utf8)
        let down = try SVGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 38))).bitmap
        #expect((0..<38).allSatisfy { y in (0..<64).allSatisfy { down.pixel(x: $0, y: y).a == 255 } })
        let up = try SVGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 39))).bitmap
        #expect((0..<64).allSatisfy { up.pixel(x: $0, y: 37).a == 255 && up.pixel(x: $0, y: 38).a < 255 && up.pixel(x: $0, y: 38).a > 0 })
    }
}
