import Foundation
import PipelineCore
import PipelineTestSupport

/// The first pixel of a response, to tell pictures apart.
func firstPixel(_ response: ImageResponse) -> [UInt8] {
    let p = response.bitmap.pixel(x: 0, y: 0)
    return [p.r, p.g, p.b, p.a]
}

func colorBytes(_ n: Int) -> [UInt8] {
    let c = FakeImage.color(for: n)
    return [c.0, c.1, c.2, c.3]
}
