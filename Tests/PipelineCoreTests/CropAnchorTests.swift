import Foundation
import PipelineCore
import Testing

/// Gravity and focal points are geometry in ``ResizePlan``; every anchor is part of a fill's
/// key and of no fit's.
@Suite("Crop anchors")
struct CropAnchorTests {
    /// 200 × 100 filled into 50 × 50: scale 0.5, a 100 × 100 window that can move 100 pixels.
    static func window(_ anchor: CropAnchor) -> PixelRect {
        ResizePlan(source: PixelSize(width: 200, height: 100), target: .pixels(PixelSize(width: 50, height: 50)),
                   contentMode: .fill, anchor: anchor).crop
    }

    @Test func gravityKeepsTheSideAndFocalPointsCentreAsCloseAsTheEdgesAllow() {
        #expect(Self.window(.center) == PixelRect(x: 50, y: 0, width: 100, height: 100))
        #expect(Self.window(.left).x == 0)
        #expect(Self.window(.right).x == 100)
        #expect(Self.window(.topRight).x == 100)
        #expect(Self.window(.top) == Self.window(.center), "no vertical room: top is the centre")
        #expect(Self.window(.focalPoint(x: 0.25, y: 0.5)).x == 0, "50 − 50, at the edge")
        #expect(Self.window(.focalPoint(x: 0.6, y: 0.5)).x == 70, "120 − 50")
        #expect(Self.window(.focalPoint(x: 0.9, y: 0.5)).x == 100, "clamped at the right edge")
        #expect(Self.window(.focalPoint(x: 0.5, y: 0.5)) == Self.window(.center))
        let tall = ResizePlan(source: PixelSize(width: 100, height: 300), target: .pixels(PixelSize(width: 100, height: 100)),
                              contentMode: .fill, anchor: .bottom).crop
        #expect(tall == PixelRect(x: 0, y: 200, width: 100, height: 100))
    }

    @Test func focalPointsAreClampedAndNaNIsTheCentre() {
        #expect(CropAnchor.focalPoint(x: 0.5, y: 0.5) == .center)
        #expect(CropAnchor.focalPoint(x: .nan, y: 7) == .bottom, "NaN is the centre, 7 is clamped to 1")
        #expect(CropAnchor.focalPoint(x: -1, y: 0) == .topLeft)
        #expect(CropAnchor.focalPoint(x: 0.25, y: 0.6).description == "focal(0.25,0.6)")
        #expect(CropAnchor.bottomRight.description == "bottomRight")
    }

    @Test func theAnchorIsPartOfAFillsKeyOnly() {
        let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry([]), loaders: LoaderRegistry([])))
        let url = URL(fileURLWithPath: "/pictures/a.jpg")
        func key(_ mode: ContentMode, _ anchor: CropAnchor) -> ImageKey {
            pipeline.key(for: ImageRequest(url: url, targetSize: .pixels(PixelSize(width: 64, height: 64)),
                                           contentMode: mode, cropAnchor: anchor))
        }
        #expect(key(.fill, .attention) != key(.fill, .center))
        #expect(key(.fill, .attention) != key(.fill, .entropy))
        #expect(key(.fill, .top) != key(.fill, .bottom))
        #expect(key(.fit, .attention) == key(.fit, .center), "a fit crops nothing")
        #expect(key(.fill, .attention).description.hasSuffix("64×64 fill attention)"))
    }
}
