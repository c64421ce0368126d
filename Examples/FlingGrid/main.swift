// FlingGrid: a grid of 30 visible cells (3 columns × 10 rows) flung through 2,000 pictures
// served by a loopback HTTP server, with cell reuse and prefetching — the workload an image
// pipeline lives or dies by. Prints hit rates, downloads, cancellations and the peak memory
// cache size, and checks that no cell ends showing another cell's picture.
//
//   swift run -c release FlingGrid        (needs python3 for the loopback server)
//
// The server is Python's http.server, which answers some 250 small requests a second here: it,
// not the pipeline, bounds the downloads, so hard flicks outrun it and the cells of rows flung
// past are cancelled — as on a slow network. Prefetching pays off as each fling slows down.
import CodecPNG
import Foundation
import LoaderHTTP
import PipelineCore
import Synchronization

let columns = 3, visibleRows = 10, pictureCount = 2_000, prefetchRows = 20
let totalRows = pictureCount / columns

// 1. Two thousand small PNGs, each a distinct colour, in a temporary folder.
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("FlingGrid-\(getpid())")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
func color(_ n: Int) -> [UInt8] { [UInt8(n % 251), UInt8((n / 251) * 29 % 256), UInt8(n * 7 % 253), 255] }
for n in 0..<pictureCount {
    var bytes = [UInt8]()
    for _ in 0..<(96 * 96) { bytes += color(n) }
    let bitmap = Bitmap(width: 96, height: 96, bytesPerRow: 96 * 4, bytes: bytes)!
    try PNGEncoder(compressionLevel: 1).encode(bitmap).write(to: folder.appendingPathComponent("\(n).png"))
}

// 2. A loopback HTTP server for them (Python's http.server, ephemeral port, stops with us).
let server = Process()
server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
server.arguments = ["python3", "-c", """
import http.server, functools, sys, threading
class Quiet(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def handle(self):
        try: super().handle()
        except (BrokenPipeError, ConnectionResetError): pass  # a cancelled download
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=sys.argv[1]))
print(s.server_address[1], flush=True)
threading.Thread(target=s.serve_forever, daemon=True).start()
sys.stdin.read()
""", folder.path]
let serverOut = Pipe(), serverIn = Pipe()
server.standardOutput = serverOut
server.standardInput = serverIn
try server.run()
var portLine = Data()
while let byte = try serverOut.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) { portLine += byte }
guard let port = Int(String(decoding: portLine, as: UTF8.self)) else { fatalError("the loopback server did not start") }
func pictureURL(_ n: Int) -> URL { URL(string: "http://127.0.0.1:\(port)/\(n).png")! }

// 3. The pipeline, counting what it does.
final class Counters: Sendable {
    struct Values { var memoryHits = 0, downloads = 0, cancelled = 0, completed = 0, bytes = 0 }
    let values = Mutex(Values())
    var handler: @Sendable (ImagePipelineEvent) -> Void {
        { event in
            self.values.withLock {
                switch event {
                case .memoryHit: $0.memoryHits += 1
                case .loaded(_, let bytes): $0.downloads += 1; $0.bytes += bytes
                case .cancelled: $0.cancelled += 1
                case .completed: $0.completed += 1
                default: break
                }
            }
        }
    }
}
let counters = Counters()
let memoryCache = MemoryCache<ImageKey, ImageContainer>(costLimit: 4 << 20)  // ~170 cells of 64×64: evictions happen
let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry().registering(PNGDecoder()),
    loaders: LoaderRegistry().registering(HTTPDataLoader()),
    memoryCache: memoryCache,
    eventHandler: counters.handler))
func request(_ n: Int) -> ImageRequest {
    ImageRequest(url: pictureURL(n), width: 64, height: 64)
}

// 4. The grid: one binding per visible cell, reused as rows scroll past (row r uses slot r % 10).
var cells: [ImageTargetBinding] = []
var cellPicture = [Int](repeating: -1, count: columns * visibleRows)
for _ in 0..<(columns * visibleRows) { cells.append(ImageTargetBinding(pipeline: pipeline) { _ in }) }
var binds = 0, synchronousHits = 0, peakCacheBytes = 0
var prefetched = Set<Int>()
// The screen's prefetcher: synchronous calls from the main thread, in order, at prefetch priority.
let prefetcher = ImagePrefetcher(pipeline: pipeline)

@MainActor
func layout(top: Int) {
    for row in top..<min(top + visibleRows, totalRows) {
        for column in 0..<columns {
            let slot = (row % visibleRows) * columns + column, picture = row * columns + column
            guard cellPicture[slot] != picture else { continue }
            cellPicture[slot] = picture
            cells[slot].bind(request(picture))
            binds += 1
            if cells[slot].displayed != nil { synchronousHits += 1 }
        }
    }
    // Prefetch the rows ahead; cancel prefetches for rows that scrolled out behind.
    let ahead = Set((top + visibleRows)..<min(top + visibleRows + prefetchRows, totalRows))
    let behind = prefetched.filter { $0 < top }
    prefetcher.stopPrefetching(with: behind.flatMap { row in (0..<columns).map { request(row * columns + $0) } })
    prefetched.subtract(behind)
    let new = ahead.subtracting(prefetched)
    prefetcher.startPrefetching(with: new.sorted().flatMap { row in (0..<columns).map { request(row * columns + $0) } })
    prefetched.formUnion(new)
    peakCacheBytes = max(peakCacheBytes, memoryCache.totalCost)
}

// 5. Flings: each starts at 4 rows a frame (about 250 rows/s, a hard flick) and slows by
// friction until it nearly stops; the next one starts there, until the end of the grid.
let start = Date()
var frames = 0, flings = 0
var position = 0.0
let lastTop = Double(totalRows - visibleRows)
while position < lastTop {
    var velocity = 4.0
    flings += 1
    while velocity > 0.1 && position < lastTop {
        layout(top: Int(position))
        position = min(lastTop, position + velocity)
        velocity *= 0.96
        frames += 1
        try await Task.sleep(nanoseconds: 16_000_000)
    }
}
let finalTop = totalRows - visibleRows
layout(top: finalTop)
while cells.contains(where: \.isLoading) { try await Task.sleep(nanoseconds: 5_000_000) }
let elapsed = Date().timeIntervalSince(start)

// 6. Every cell must show its own picture.
var wrong = 0
for (slot, cell) in cells.enumerated() {
    guard let shown = cell.displayed else { wrong += 1; continue }
    let p = shown.bitmap.pixel(x: 10, y: 10)
    if [p.r, p.g, p.b, p.a] != color(cellPicture[slot]) { wrong += 1 }
}
prefetcher.stopPrefetching()
try? serverIn.fileHandleForWriting.close()
server.waitUntilExit()

let c = counters.values.withLock { $0 }
print(String(format: "%d flings, %d frames in %.2f s, %d binds (%d answered synchronously from memory, %.0f%%)",
             flings, frames, elapsed, binds, synchronousHits, 100 * Double(synchronousHits) / Double(max(binds, 1))))
print("pipeline: \(c.completed) answered, \(c.memoryHits) memory hits, \(c.downloads) downloads (\(c.bytes / 1024) KiB) of \(pictureCount) pictures, \(c.cancelled) cancelled")
print("peak memory cache: \(peakCacheBytes / 1024) KiB of \(memoryCache.costLimit / 1024) KiB")
print("cells showing the wrong picture: \(wrong)")
exit(wrong == 0 ? 0 : 1)
