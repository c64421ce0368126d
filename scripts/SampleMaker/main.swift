// Makes the bundled sample pictures in Samples/: procedural pictures (gradients, fine detail,
// alpha), encoded by the project's PNG encoder and by libjpeg-turbo's `cjpeg`.
// Run: ./scripts/make-samples   (needs `cjpeg` from libjpeg-turbo-progs)
import CodecPNG
import Foundation
import GIFFixtureWriter
import PipelineCore

typealias RGBA = (r: Double, g: Double, b: Double, a: Double)

/// Renders `width` × `height` straight-alpha pixels from `shade(x, y)` (coordinates 0…1).
func render(_ width: Int, _ height: Int, _ shade: (Double, Double) -> RGBA) -> (straight: [UInt8], bitmap: Bitmap) {
    var straight = [UInt8](repeating: 0, count: width * height * 4)
    for y in 0..<height {
        for x in 0..<width {
            // 2×2 supersampling keeps edges smooth.
            var sum: RGBA = (0, 0, 0, 0)
            for (dx, dy) in [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)] {
                let c = shade((Double(x) + dx) / Double(width), (Double(y) + dy) / Double(height))
                sum = (sum.r + c.r * c.a, sum.g + c.g * c.a, sum.b + c.b * c.a, sum.a + c.a)
            }
            let a = sum.a / 4
            let i = (y * width + x) * 4
            func byte(_ v: Double) -> UInt8 { UInt8(max(0, min(255, (v * 255).rounded()))) }
            straight[i] = byte(a > 0 ? sum.r / sum.a : 0)
            straight[i + 1] = byte(a > 0 ? sum.g / sum.a : 0)
            straight[i + 2] = byte(a > 0 ? sum.b / sum.a : 0)
            straight[i + 3] = byte(a)
        }
    }
    var premultiplied = straight
    premultiplied.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
    return (straight, Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: premultiplied)!)
}

func mix(_ a: RGBA, _ b: RGBA, _ t: Double) -> RGBA {
    let t = max(0, min(1, t))
    return (a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t, a.a + (b.a - a.a) * t)
}

func smoothstep(_ e0: Double, _ e1: Double, _ x: Double) -> Double {
    let t = max(0, min(1, (x - e0) / (e1 - e0)))
    return t * t * (3 - 2 * t)
}

/// Deterministic value noise in 0…1.
func hash(_ x: Int, _ y: Int) -> Double {
    var h = UInt64(bitPattern: Int64(x &* 374_761_393 &+ y &* 668_265_263))
    h = (h ^ (h >> 13)) &* 1_274_126_177
    return Double((h ^ (h >> 16)) & 0xFFFF) / 65535
}

func noise(_ x: Double, _ y: Double) -> Double {
    let xi = Int(floor(x)), yi = Int(floor(y))
    let fx = x - floor(x), fy = y - floor(y)
    let u = fx * fx * (3 - 2 * fx), v = fy * fy * (3 - 2 * fy)
    let top = hash(xi, yi) + (hash(xi + 1, yi) - hash(xi, yi)) * u
    let bottom = hash(xi, yi + 1) + (hash(xi + 1, yi + 1) - hash(xi, yi + 1)) * u
    return top + (bottom - top) * v
}

func fbm(_ x: Double, _ y: Double, octaves: Int = 5) -> Double {
    var sum = 0.0, amplitude = 0.5, frequency = 1.0
    for _ in 0..<octaves {
        sum += amplitude * noise(x * frequency, y * frequency)
        amplitude *= 0.5
        frequency *= 2
    }
    return sum
}

let width = 480, height = 320

// Aurora over mountains: gradients, soft curtains, stars, a hard ridge line.
let aurora = render(width, height) { x, y in
    var sky = mix((0.02, 0.03, 0.12, 1), (0.10, 0.05, 0.25, 1), y)
    let curtain = sin(x * 9 + sin(x * 3.1) * 1.7) * 0.08 + 0.32
    let band = exp(-pow((y - curtain) / 0.09, 2)) * (0.6 + 0.4 * fbm(x * 20, y * 3))
    let rays = 0.5 + 0.5 * sin(x * 140 + fbm(x * 8, 0) * 9)
    sky = mix(sky, (0.2, 1.0, 0.55, 1), band * (0.5 + 0.5 * rays))
    sky = mix(sky, (0.75, 0.3, 0.9, 1), exp(-pow((y - curtain + 0.12) / 0.06, 2)) * 0.5)
    if hash(Int(x * 960), Int(y * 640)) > 0.997 { sky = mix(sky, (1, 1, 1, 1), 0.9) }
    let ridge = 0.72 + 0.12 * fbm(x * 6, 1.5) - 0.05 * sin(x * 5)
    if y > ridge { return mix((0.03, 0.04, 0.08, 1), (0.0, 0.0, 0.02, 1), (y - ridge) * 4) }
    return sky
}

// Translucent glass discs on a transparent background: alpha.
let glass = render(width, height) { x, y in
    let discs: [(Double, Double, Double, RGBA)] = [
        (0.30, 0.45, 0.26, (0.95, 0.25, 0.30, 0.70)), (0.52, 0.42, 0.24, (0.20, 0.75, 0.35, 0.65)),
        (0.42, 0.64, 0.22, (0.20, 0.45, 0.95, 0.70)), (0.74, 0.55, 0.17, (1.00, 0.80, 0.10, 0.80)),
    ]
    var color: RGBA = (0, 0, 0, 0)
    let px = x * 1.5
    for (cx, cy, r, c) in discs {
        let d = hypot(px - cx * 1.5, y - cy)
        let edge = 1 - smoothstep(r - 0.006, r + 0.006, d)
        guard edge > 0 else { continue }
        let rim = smoothstep(r * 0.7, r, d) * 0.35
        let a = c.a * edge
        let src: RGBA = (min(1, c.r + rim), min(1, c.g + rim), min(1, c.b + rim), a)
        // "over" with straight colours.
        let outA = src.a + color.a * (1 - src.a)
        guard outA > 0 else { continue }
        color = ((src.r * src.a + color.r * color.a * (1 - src.a)) / outA,
                 (src.g * src.a + color.g * color.a * (1 - src.a)) / outA,
                 (src.b * src.a + color.b * color.a * (1 - src.a)) / outA, outA)
    }
    return color
}

// Fine concentric rings: a resampler with a poor filter shows moiré here.
let rings = render(360, 240) { x, y in
    let d = hypot((x - 0.5) * 1.5, y - 0.5)
    let v = 0.5 + 0.5 * cos(d * d * 600)
    return mix((0.05, 0.10, 0.20, 1), (0.95, 0.90, 0.80, 1), v)
}

// Mandelbrot with smooth colouring: detail everywhere.
let mandelbrot = render(width, height) { x, y in
    let cr = -0.7453 + (x - 0.5) * 0.02, ci = 0.1127 + (y - 0.5) * 0.0133
    var zr = 0.0, zi = 0.0, n = 0
    while n < 300 && zr * zr + zi * zi < 256 {
        (zr, zi) = (zr * zr - zi * zi + cr, 2 * zr * zi + ci)
        n += 1
    }
    if n == 300 { return (0, 0, 0.03, 1) }
    let smooth = Double(n) - log2(log2(zr * zr + zi * zi)) + 4
    let t = smooth / 40
    return (0.5 + 0.5 * cos(6.283 * (t + 0.0)), 0.5 + 0.5 * cos(6.283 * (t + 0.15)), 0.5 + 0.5 * cos(6.283 * (t + 0.3)), 1)
}

// Dunes at sunset: large gradients, gentle shading.
let dunes = render(width, height) { x, y in
    var color = mix((0.98, 0.55, 0.25, 1), (0.30, 0.20, 0.45, 1), (0.5 - y) * 2.2)
    let sun = exp(-pow(hypot((x - 0.7) * 1.5, y - 0.38) / 0.06, 2))
    color = mix(color, (1, 0.95, 0.7, 1), sun)
    for layer in 0..<4 {
        let l = Double(layer)
        let crest = 0.5 + l * 0.12 + 0.05 * sin(x * (4 + l) + l * 2) + 0.02 * fbm(x * 10, l)
        if y > crest {
            let slope = cos(x * (4 + l) + l * 2)
            let base: RGBA = (0.85 - l * 0.12, 0.55 - l * 0.08, 0.30 - l * 0.04, 1)
            color = mix(base, (0.35, 0.18, 0.12, 1), 0.5 - 0.5 * slope + (y - crest) * 1.5)
        }
    }
    return color
}

// A hot-air balloon, 320×480 upright: stored turned 90° counter-clockwise with EXIF
// orientation 6, so it only looks right when orientation is applied.
let balloonUpright = render(320, 480) { x, y in
    var color = mix((0.45, 0.70, 0.98, 1), (0.85, 0.93, 1.0, 1), y)
    let cloud = fbm(x * 6 + 3, y * 10)
    color = mix(color, (1, 1, 1, 1), smoothstep(0.55, 0.75, cloud) * 0.8)
    let d = hypot((x - 0.5) * 0.667 / 0.667, (y - 0.33) * 1.5 * 0.667)
    if d < 0.28 {
        let stripe = Int(((atan2(y - 0.33, x - 0.5) + 3.1416) / 6.2832) * 12) % 2
        let shade = 1 - d * 1.2
        color = stripe == 0 ? (0.90 * shade, 0.15 * shade, 0.20 * shade, 1) : (1.0 * shade, 0.85 * shade, 0.20 * shade, 1)
    }
    if abs(x - 0.5) < 0.045 && y > 0.63 && y < 0.68 { color = (0.45, 0.28, 0.12, 1) }
    if y > 0.52 && y < 0.63 && (abs(x - 0.5 - (y - 0.52) * 0.6) < 0.004 || abs(x - 0.5 + (y - 0.52) * 0.6) < 0.004) {
        color = (0.2, 0.15, 0.1, 1)
    }
    if y > 0.88 - 0.03 * sin(x * 12) { color = mix((0.25, 0.55, 0.20, 1), (0.15, 0.35, 0.12, 1), (y - 0.85) * 6) }
    return color
}

// A grey moon with craters.
let moon = render(width, height) { x, y in
    let d = hypot((x - 0.5) * 1.5, y - 0.5)
    if d > 0.4 { let s = hash(Int(x * 480), Int(y * 320)) > 0.995 ? 0.8 : 0.02; return (s, s, s, 1) }
    var v = 0.75 - 0.25 * fbm(x * 8, y * 8) - d * 0.4
    for i in 0..<9 {
        let cx = 0.5 + (hash(i, 1) - 0.5) * 0.5, cy = 0.5 + (hash(i, 2) - 0.5) * 0.55
        let r = 0.02 + hash(i, 3) * 0.06
        let cd = hypot((x - cx) * 1.5, y - cy)
        if cd < r { v -= 0.25 * (1 - cd / r) } else if cd < r * 1.2 { v += 0.08 }
    }
    return (v, v, v, 1)
}

// Sunflower seeds in a golden-angle spiral.
let sunflower = render(width, height) { x, y in
    let px = (x - 0.5) * 1.5, py = y - 0.5
    let r = hypot(px, py)
    var color = mix((0.10, 0.35, 0.15, 1), (0.02, 0.12, 0.05, 1), r * 1.6)
    if r < 0.42 {
        // The nearest seed index for this radius, then its neighbours.
        let n0 = Int((r / 0.42) * (r / 0.42) * 900)
        var best = 1.0
        for n in max(0, n0 - 40)...min(900, n0 + 40) {
            let rr = 0.42 * sqrt(Double(n) / 900), angle = Double(n) * 2.39996
            best = min(best, hypot(px - rr * cos(angle), py - rr * sin(angle)))
        }
        let seed = smoothstep(0.010, 0.006, best)
        let petal = r > 0.33 ? (0.98, 0.78, 0.10, 1.0) : (0.35, 0.20, 0.08, 1.0)
        color = mix((0.12, 0.07, 0.03, 1), petal, seed)
    }
    return color
}

/// The stored pixels for EXIF orientation 6: the upright picture turned counter-clockwise.
func turnedCounterClockwise(_ bitmap: Bitmap) -> Bitmap {
    bitmap.oriented(.left)
}

let samples = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "Samples")
try FileManager.default.createDirectory(at: samples, withIntermediateDirectories: true)

func writePNG(_ name: String, _ bitmap: Bitmap) throws {
    try PNGEncoder().encode(bitmap).write(to: samples.appendingPathComponent(name))
}

/// Writes `bitmap` as PPM (or PGM) and runs `cjpeg` with `arguments` on it.
func writeJPEG(_ name: String, _ bitmap: Bitmap, gray: Bool = false, arguments: [String], exifOrientation: Int? = nil) throws {
    let ppm = FileManager.default.temporaryDirectory.appendingPathComponent("sample-\(name).p\(gray ? "gm" : "pm")")
    var bytes = Data("\(gray ? "P5" : "P6")\n\(bitmap.width) \(bitmap.height)\n255\n".utf8)
    let rgba = bitmap.unpremultipliedBytes()
    for i in stride(from: 0, to: rgba.count, by: 4) {
        if gray {
            let r = Double(rgba[i]), g = Double(rgba[i + 1]), b = Double(rgba[i + 2])
            let luma: Double = r * 0.299 + g * 0.587 + b * 0.114
            bytes.append(UInt8(luma.rounded()))
        } else {
            bytes.append(contentsOf: rgba[i..<i + 3])
        }
    }
    try bytes.write(to: ppm)
    defer { try? FileManager.default.removeItem(at: ppm) }
    let out = samples.appendingPathComponent(name)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/cjpeg")
    process.arguments = arguments + ["-outfile", out.path, ppm.path]
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
    if let orientation = exifOrientation {
        // Splice a minimal Exif APP1 (big-endian TIFF, one IFD entry: Orientation) after SOI.
        var jpeg = try Data(contentsOf: out)
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1]
        tiff += [0, UInt8(orientation), 0, 0, 0, 0, 0, 0]
        var payload: [UInt8] = Array("Exif".utf8)
        payload += [0, 0]
        payload += tiff
        let length = payload.count + 2
        var segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)]
        segment += payload
        jpeg.insert(contentsOf: segment, at: 2)
        try jpeg.write(to: out)
    }
}

/// orbit.gif: a 96×96, 16-frame animation that loops forever: a shaded ball circling over a
/// gradient. Frame 0 is the whole picture; each later frame is only the rectangle covering the
/// ball's last and new places (background where it was, the ball where it is, the transparent
/// index elsewhere), so decoders must composite.
func orbitGIF() -> Data {
    let size = 96, ball = 24, frameCount = 16
    var palette: [(UInt8, UInt8, UInt8)] = []
    for i in 0..<128 {  // background: deep blue to violet
        let t = Double(i) / 127
        palette.append((UInt8(30 + 90 * t), UInt8(20 + 30 * t), UInt8(90 + 110 * t)))
    }
    for i in 0..<127 {  // ball: dark orange to near white
        let t = Double(i) / 126
        palette.append((UInt8(120 + 135 * t), UInt8(50 + 190 * t), UInt8(10 + 200 * t * t)))
    }
    palette.append((0, 0, 0))  // 255: transparent
    func background(_ x: Int, _ y: Int) -> UInt8 { UInt8(min(127, (x + y) * 127 / (2 * size - 2))) }
    func origin(_ f: Int) -> (x: Int, y: Int) {
        let angle = Double(f) / Double(frameCount) * 2 * Double.pi
        return (Int(Double(size / 2) + 30 * cos(angle)) - ball / 2, Int(Double(size / 2) + 30 * sin(angle)) - ball / 2)
    }
    /// The ball's palette index at canvas (x, y) for frame f, or nil outside it.
    func ballIndex(_ f: Int, _ x: Int, _ y: Int) -> UInt8? {
        let o = origin(f)
        let dx = (Double(x - o.x) + 0.5 - Double(ball) / 2) / (Double(ball) / 2)
        let dy = (Double(y - o.y) + 0.5 - Double(ball) / 2) / (Double(ball) / 2)
        guard dx * dx + dy * dy <= 1 else { return nil }
        let light = max(0, min(1, 0.55 - 0.45 * dx - 0.45 * dy + 0.3 * (1 - dx * dx - dy * dy)))
        return UInt8(128 + Int(light * 126))
    }
    var first = [UInt8](repeating: 0, count: size * size)
    for y in 0..<size { for x in 0..<size { first[y * size + x] = ballIndex(0, x, y) ?? background(x, y) } }
    var frames = [GIFWriter.Frame(width: size, height: size, indices: first, delayCentiseconds: 6, disposal: 1)]
    for f in 1..<frameCount {
        let a = origin(f - 1), b = origin(f)
        let left = min(a.x, b.x), top = min(a.y, b.y)
        let width = max(a.x, b.x) + ball - left, height = max(a.y, b.y) + ball - top
        var indices = [UInt8](repeating: 255, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let cx = left + x, cy = top + y
                if let index = ballIndex(f, cx, cy) {
                    indices[y * width + x] = index
                } else if ballIndex(f - 1, cx, cy) != nil {
                    indices[y * width + x] = background(cx, cy)
                }
            }
        }
        frames.append(GIFWriter.Frame(x: left, y: top, width: width, height: height, indices: indices,
                                      delayCentiseconds: 6, disposal: 1, transparentIndex: 255))
    }
    return GIFWriter.gif(width: size, height: size, palette: palette, loopCount: 0, frames: frames)
}

try orbitGIF().write(to: samples.appendingPathComponent("orbit.gif"))
try writePNG("aurora.png", aurora.bitmap)
try writePNG("glass-alpha.png", glass.bitmap)
try writePNG("rings.png", rings.bitmap)
try writeJPEG("mandelbrot.jpg", mandelbrot.bitmap, arguments: ["-quality", "90"])
try writeJPEG("dunes-progressive.jpg", dunes.bitmap, arguments: ["-quality", "88", "-progressive"])
try writeJPEG("balloon-exif6.jpg", turnedCounterClockwise(balloonUpright.bitmap), arguments: ["-quality", "90"], exifOrientation: 6)
try writeJPEG("moon-gray.jpg", moon.bitmap, gray: true, arguments: ["-quality", "90", "-grayscale"])
try writeJPEG("sunflower-arithmetic.jpg", sunflower.bitmap, arguments: ["-quality", "85", "-arithmetic"])
print("wrote samples to \(samples.path)")
