import PipelineCore
import Testing

/// A vector source (`ImageInfo.isVector`) is drawn at the size planned: the plan upscales
/// whatever `allowsUpscaling` says, and the decoder's target is the whole picture at the scale
/// chosen, not capped at the natural size.
struct VectorPlanTests {
    @Test func aFitIsDrawnAtTheOutputSizeLargerThanTheSourceToo() {
        let plan = ResizePlan(source: PixelSize(width: 16, height: 16), target: .pixels(PixelSize(width: 512, height: 512)),
                              contentMode: .fit, rendersAtAnySize: true)
        #expect(plan.scaledSize == PixelSize(width: 512, height: 512) && plan.outputSize == plan.scaledSize)
        #expect(plan.crop == PixelRect(PixelSize(width: 16, height: 16)))
        let raster = ResizePlan(source: PixelSize(width: 16, height: 16), target: .pixels(PixelSize(width: 512, height: 512)),
                                contentMode: .fit)
        #expect(raster.scaledSize == PixelSize(width: 16, height: 16) && raster.outputSize == raster.scaledSize)
    }

    @Test func aFillDrawsTheCoverAndCropsIt() {
        let plan = ResizePlan(source: PixelSize(width: 120, height: 60), target: .pixels(PixelSize(width: 256, height: 256)),
                              contentMode: .fill, rendersAtAnySize: true)
        #expect(plan.scaledSize == PixelSize(width: 512, height: 256))
        #expect(plan.outputSize == PixelSize(width: 256, height: 256))
        #expect(plan.crop == PixelRect(x: 30, y: 0, width: 60, height: 60))
    }

    @Test func aSmallerTargetPlansAsForARaster() {
        let source = PixelSize(width: 300, height: 150), target = TargetSize.pixels(PixelSize(width: 100, height: 100))
        for mode in [ContentMode.fit, .fill] {
            #expect(ResizePlan(source: source, target: target, contentMode: mode, rendersAtAnySize: true)
                    == ResizePlan(source: source, target: target, contentMode: mode))
        }
    }
}
