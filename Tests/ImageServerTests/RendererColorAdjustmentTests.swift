import Foundation
@testable import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// `adjust`, `brightness`, `contrast` and `saturation` through the renderer: the library's
/// ``ColorAdjustment`` on the resized picture, before padding and flattening.
@Suite("Renderer colour adjustments", .timeLimit(.minutes(2)))
struct RendererColorAdjustmentTests {
    /// `a:20:1.5:0.5` is exactly the processor with offset 20, contrast 1.5 and saturation 0.5
    /// on the picture the same URL without it renders (an opaque photo, so straight and
    /// premultiplied pixels are the same).
    @Test func adjustIsTheProcessorOnTheResizedPicture() async throws {
        var plain = RenderOptions()
        plain.width = 120
        var adjusted = plain
        adjusted.brightness = 20
        adjusted.contrast = 1.5
        adjusted.saturation = 0.5
        let source = RenderFixture.sample("dunes-progressive.jpg")
        let before = try RenderFixture.decode(try await RenderFixture.render(plain, source).data).bitmap
        let after = try RenderFixture.decode(try await RenderFixture.render(adjusted, source).data).bitmap
        let expected = try ImageProcessor.colorAdjustment(ColorAdjustment(brightnessOffset: 20, contrast: 1.5, saturation: 0.5))
            .process(before)
        #expect(after.size == before.size)
        #expect(after.withUnsafeBytes { Array($0) } == expected.withUnsafeBytes { Array($0) })
        #expect(after.withUnsafeBytes { Array($0) } != before.withUnsafeBytes { Array($0) })
    }

    /// imgproxy's order: the filters before padding and the background, so `br:-255` blackens
    /// the picture while the padding keeps the background's white.
    @Test func paddingAndBackgroundComeAfterTheAdjustments() async throws {
        var options = RenderOptions()
        options.width = 60
        options.padding = RenderOptions.Padding(top: 10, right: 10, bottom: 10, left: 10)
        options.background = .white
        options.brightness = -255
        let rendered = try await RenderFixture.render(options, RenderFixture.sample("dunes-progressive.jpg"))
        let bitmap = try RenderFixture.decode(rendered.data).bitmap
        #expect(bitmap.width == 80)
        #expect(RenderFixture.near(bitmap.pixel(x: 2, y: 2), (255, 255, 255, 255), tolerance: 0))
        #expect(RenderFixture.near(bitmap.pixel(x: 40, y: bitmap.height / 2), (0, 0, 0, 255), tolerance: 0))
    }
}
